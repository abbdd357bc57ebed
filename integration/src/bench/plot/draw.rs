//! Drawing a [`Plot`] into an SVG file with `plotters`.
//!
//! Both axes are drawn on linear internal coordinates: x at each tick's position (log2 of a
//! client count, or a percentile's rank), y at the
//! value or at its log10. `plotters` draws the axes; the grid lines and tick labels are drawn
//! here, at the measured x values and the chosen y ticks only, which is what keeps fractional
//! client counts off the axis.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axis::{linear_ticks, log_ticks, tick_text, x_ticks};
use super::labels::{spread, stack};
use super::{Plot, YAxis};
use crate::bench::BenchError;

/// Line colours, one per series in turn.
const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// Pixels between two value labels at one x.
const LABEL_GAP: i32 = 13;

/// Pixels from a point up to the bottom of its value label.
const LABEL_RISE: i32 = 8;

/// Pixels a marker reaches from its point.
const MARKER: i32 = 6;

/// Draws `plot` (800 x 500 px) into the SVG file `path`: one line per series, a marker on
/// every point (circle, triangle, square, cross, in turn) with its value beside it.
///
/// # Errors
/// [`BenchError::Plot`] if there is nothing to draw, or drawing or writing the file fails.
pub fn plot_svg(path: &Path, plot: &Plot) -> Result<(), BenchError> {
    draw(path, plot).map_err(|detail| BenchError::Plot {
        path: path.display().to_string(),
        detail,
    })
}

/// A point's value as its label: 3 significant digits or more.
fn value_text(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn draw(path: &Path, plot: &Plot) -> Result<(), String> {
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let points = || plot.series.iter().flat_map(|s| s.points.iter().copied());
    let ticks = x_ticks(plot.x_axis, points().map(|p| p.0));
    let (Some(first), Some(last)) = (ticks.first(), ticks.last()) else {
        return Err("no points to draw".into());
    };
    // Room on both sides for the outer points' markers, and on the right for the value
    // labels beside the last points.
    let span = (last.at - first.at).max(1.0);
    let x_range = (first.at - 0.1 * span)..(last.at + 0.2 * span);
    let x_of = |x: f64| {
        ticks
            .iter()
            .find(|t| t.value == x)
            .map_or(f64::NAN, |t| t.at)
    };

    let ys: Vec<f64> = points().map(|p| p.1).filter(|y| y.is_finite()).collect();
    let y_max = ys.iter().copied().fold(0.0, f64::max);
    let positive_min = ys
        .iter()
        .copied()
        .filter(|y| *y > 0.0)
        .fold(f64::INFINITY, f64::min);
    let (y_range, y_ticks, log) = match plot.y_axis {
        YAxis::Linear => {
            let t = linear_ticks(y_max);
            let top = t.last().copied().unwrap_or(1.0).max(y_max * 1.08);
            (0.0..top, t, false)
        }
        YAxis::Log10 => {
            let min = if positive_min.is_finite() {
                positive_min
            } else {
                1.0
            };
            let t = log_ticks(min, y_max.max(min));
            let lo = t.first().copied().unwrap_or(min).min(min / 1.5).log10();
            let hi = t.last().copied().unwrap_or(min).max(y_max * 1.5).log10();
            (lo..hi, t.iter().map(|v| v.log10()).collect(), true)
        }
    };
    // Values at or below 0 cannot be drawn on a log axis: they sit at its bottom.
    let y_of = |y: f64| {
        if log {
            y.max(f64::MIN_POSITIVE).log10().max(y_range.start)
        } else {
            y
        }
    };

    let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&plot.title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x_range.clone(), y_range.clone())
        .map_err(|x| e(&x))?;
    // The mesh draws the axes and their descriptions only; the ticks are drawn below, at
    // the measured x values and the y ticks chosen above.
    chart
        .configure_mesh()
        .disable_x_mesh()
        .disable_y_mesh()
        .x_labels(0)
        .y_labels(0)
        .x_desc(plot.x_label.as_str())
        .y_desc(plot.y_label.as_str())
        .draw()
        .map_err(|x| e(&x))?;
    let grid = RGBColor(200, 200, 200);
    let tick_font = || ("sans-serif", 12).into_font().color(&BLACK);
    for t in &ticks {
        chart
            .draw_series(LineSeries::new(
                [(t.at, y_range.start), (t.at, y_range.end)],
                grid.stroke_width(1),
            ))
            .map_err(|x| e(&x))?;
        let (px, py) = chart.backend_coord(&(t.at, y_range.start));
        let style = tick_font().pos(Pos::new(HPos::Center, VPos::Top));
        root.draw(&Text::new(t.label.clone(), (px, py + 6), style))
            .map_err(|x| e(&x))?;
    }
    for &v in y_ticks.iter().filter(|v| y_range.contains(*v)) {
        chart
            .draw_series(LineSeries::new(
                [(x_range.start, v), (x_range.end, v)],
                grid.stroke_width(1),
            ))
            .map_err(|x| e(&x))?;
        let (px, py) = chart.backend_coord(&(x_range.start, v));
        let style = tick_font().pos(Pos::new(HPos::Right, VPos::Center));
        let text = tick_text(if log { 10f64.powf(v) } else { v });
        root.draw(&Text::new(text, (px - 6, py), style))
            .map_err(|x| e(&x))?;
    }

    let mut labels: Vec<(f64, usize, (f64, f64), RGBColor)> = Vec::new();
    for (i, s) in plot.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let drawn: Vec<(f64, f64)> = s.points.iter().map(|p| (x_of(p.0), y_of(p.1))).collect();
        let line = LineSeries::new(drawn.iter().copied(), colour.stroke_width(2));
        let segment = move || PathElement::new(vec![(-12, 0), (12, 0)], colour.stroke_width(2));
        let fill = colour.filled();
        let anno = chart.draw_series(line).map_err(|x| e(&x))?;
        anno.label(s.name.clone());
        match i % 4 {
            0 => {
                anno.legend(move |p| {
                    EmptyElement::at(p) + segment() + Circle::new((0, 0), 4, fill)
                });
                chart.draw_series(drawn.iter().map(|p| Circle::new(*p, 5, fill)))
            }
            1 => {
                anno.legend(move |p| {
                    EmptyElement::at(p) + segment() + TriangleMarker::new((0, 0), 5, fill)
                });
                chart.draw_series(drawn.iter().map(|p| TriangleMarker::new(*p, 6, fill)))
            }
            2 => {
                anno.legend(move |p| {
                    EmptyElement::at(p) + segment() + Rectangle::new([(-4, -4), (4, 4)], fill)
                });
                chart.draw_series(
                    drawn
                        .iter()
                        .map(|p| EmptyElement::at(*p) + Rectangle::new([(-5, -5), (5, 5)], fill)),
                )
            }
            _ => {
                let stroke = colour.stroke_width(2);
                anno.legend(move |p| {
                    EmptyElement::at(p) + segment() + Cross::new((0, 0), 4, stroke)
                });
                chart.draw_series(drawn.iter().map(|p| Cross::new(*p, 5, stroke)))
            }
        }
        .map_err(|x| e(&x))?;
        for (p, d) in s.points.iter().zip(&drawn) {
            labels.push((p.1, i, *d, colour));
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|x| e(&x))?;

    // Each point's value beside it, those at one x moved apart so none hides another.
    for tick in &ticks {
        let here: Vec<&(f64, usize, (f64, f64), RGBColor)> = labels
            .iter()
            .filter(|l| l.2.0 == tick.at && l.2.1.is_finite())
            .collect();
        let pixels: Vec<(i32, i32)> = here.iter().map(|l| chart.backend_coord(&l.2)).collect();
        // Above the marker, where the lines to the neighbouring points seldom pass; at the
        // last x, where no line leaves to the right, beside it (clear of the other series'
        // markers at that x).
        let ys: Vec<i32> = pixels.iter().map(|p| p.1).collect();
        let (rows, dx, pos) = if tick.at == last.at {
            (
                spread(&ys, LABEL_GAP),
                9,
                Pos::new(HPos::Left, VPos::Center),
            )
        } else {
            (
                stack(&ys, LABEL_GAP, LABEL_RISE, MARKER),
                0,
                Pos::new(HPos::Center, VPos::Bottom),
            )
        };
        for ((label, (px, _)), row) in here.iter().zip(&pixels).zip(rows) {
            let style = ("sans-serif", 12).into_font().color(&label.3).pos(pos);
            root.draw(&Text::new(value_text(label.0), (px + dx, row), style))
                .map_err(|x| e(&x))?;
        }
    }
    root.present().map_err(|x| e(&x))
}

#[cfg(test)]
mod tests {
    use super::super::{Series, XAxis};
    use super::*;

    #[test]
    fn a_client_chart_has_ticks_at_the_measured_counts_and_a_marker_and_value_per_point() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chart.svg");
        let plot = Plot {
            title: "tps".into(),
            x_label: "clients".into(),
            y_label: "tps".into(),
            x_axis: XAxis::Log2,
            y_axis: YAxis::Log10,
            series: vec![
                Series {
                    name: "grouping off".into(),
                    points: vec![(1.0, 656.0), (8.0, 400.0), (256.0, 165.0)],
                },
                Series {
                    name: "grouping on".into(),
                    points: vec![(1.0, 642.0), (8.0, 3000.0), (256.0, 12787.0)],
                },
            ],
        };
        plot_svg(&path, &plot).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        let texts: Vec<&str> = svg
            .split("<text")
            .skip(1)
            .filter_map(|t| t.split_once('>').and_then(|(_, r)| r.split_once("</text>")))
            .map(|(text, _)| text.trim())
            .collect();
        // The x ticks are exactly the measured client counts, no fractions in between.
        for tick in ["1", "8", "256"] {
            assert!(texts.contains(&tick), "{tick}: {texts:?}");
        }
        for not_measured in ["0.5", "2.5", "50.0", "100.0", "128"] {
            assert!(!texts.contains(&not_measured), "{not_measured}: {texts:?}");
        }
        // Every point's value is written, the two 1-client values (2% apart) both.
        for value in ["656", "400", "165", "642", "3000", "12787"] {
            assert!(texts.contains(&value), "{value}: {texts:?}");
        }
        // Markers: a circle per point of the first series (and its legend), a triangle
        // (a polygon) per point of the second.
        assert_eq!(svg.matches("<circle").count(), 3 + 1, "{svg}");
        assert_eq!(svg.matches("<polygon").count(), 3 + 1, "{svg}");
        assert!(texts.contains(&"grouping off") && texts.contains(&"grouping on"));
    }

    #[test]
    fn nothing_to_draw_is_an_error_not_an_empty_file() {
        let dir = tempfile::tempdir().unwrap();
        let plot = Plot {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_axis: XAxis::Log2,
            y_axis: YAxis::Linear,
            series: Vec::new(),
        };
        assert!(plot_svg(&dir.path().join("c.svg"), &plot).is_err());
    }
}
