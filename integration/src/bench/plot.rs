//! SVG line charts of benchmark results, drawn with `plotters`.

use std::path::Path;

use plotters::prelude::*;

use super::BenchError;

/// One line of a chart: a name for the legend and its (x, y) points in x order.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The legend's text.
    pub name: String,
    /// The points.
    pub points: Vec<(f64, f64)>,
}

/// Line colours, one per series in turn.
const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// Draws `series` as lines on one chart (800 x 500 px) into the SVG file `path`.
///
/// # Errors
/// [`BenchError::Plot`] if drawing or writing the file fails.
pub fn plot_svg(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<(), BenchError> {
    draw(path, title, x_label, y_label, series).map_err(|detail| BenchError::Plot {
        path: path.display().to_string(),
        detail,
    })
}

fn draw(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<(), String> {
    let all = || series.iter().flat_map(|s| s.points.iter());
    let x_max = all().map(|p| p.0).fold(0.0, f64::max).max(1.0);
    let x_min = all().map(|p| p.0).fold(x_max, f64::min).min(0.0);
    let y_max = all().map(|p| p.1).fold(0.0, f64::max).max(1e-9) * 1.1;
    let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x_min..x_max * 1.02, 0.0..y_max)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        chart
            .draw_series(LineSeries::new(
                s.points.iter().copied(),
                colour.stroke_width(2),
            ))
            .map_err(|e| e.to_string())?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
        chart
            .draw_series(s.points.iter().map(|p| Circle::new(*p, 3, colour.filled())))
            .map_err(|e| e.to_string())?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_of_two_series_is_an_svg_with_both_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chart.svg");
        let series = [
            Series {
                name: "sync".into(),
                points: vec![(1.0, 10.0), (8.0, 50.0)],
            },
            Series {
                name: "in-memory".into(),
                points: vec![(1.0, 12.0), (8.0, 80.0)],
            },
        ];
        plot_svg(&path, "tps", "clients", "tps", &series).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
        assert!(svg.contains("in-memory") && svg.contains("sync"));
    }
}
