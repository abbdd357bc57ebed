//! SVG line charts of benchmark results, drawn with `plotters`.
//!
//! A chart's x axis has a tick at every measured x value and nowhere else: the benchmarks
//! measure a few client counts (1, 8, 32) or a few percentiles, and a linear axis with ticks
//! at 2.5 or 7.5 clients, or the 1-client point squeezed against the axis, says nothing true.
//! Client counts go on a log2 axis ([`XAxis::Log2`]), percentiles evenly spaced in order
//! ([`XAxis::Ranked`]). Every point has a marker (a shape per series) and its value written
//! beside it, so two series that nearly meet (grouping on and off at one client) can still
//! be told apart.

mod axis;
mod draw;
mod labels;

pub use axis::{XAxis, YAxis};
pub use draw::plot_svg;

/// One line of a chart: a name for the legend and its (x, y) points in x order.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The legend's text.
    pub name: String,
    /// The points.
    pub points: Vec<(f64, f64)>,
}

/// A chart: its texts, how its axes are scaled, and its lines.
#[derive(Debug, Clone)]
pub struct Plot {
    /// The title above the chart.
    pub title: String,
    /// The x axis's description.
    pub x_label: String,
    /// The y axis's description.
    pub y_label: String,
    /// How the x axis places the measured values.
    pub x_axis: XAxis,
    /// How the y axis is scaled.
    pub y_axis: YAxis,
    /// The lines.
    pub series: Vec<Series>,
}
