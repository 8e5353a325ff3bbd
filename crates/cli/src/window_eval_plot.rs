//! `panewise window eval --plot`: cost against loss per strategy, the frontier marked, drawn
//! with plotters to SVG or PNG. The PNG's text is set in DejaVu Sans, embedded in the binary
//! (`assets/DejaVuSans.ttf`, Bitstream Vera licence beside it), so the picture is the same on
//! every machine whatever fonts it has.

use std::path::Path;

use anyhow::{anyhow, Context, Result};
use panewise_window_eval::report::Report;
use plotters::coord::Shift;
use plotters::prelude::*;

/// The embedded font, registered once for the bitmap backend.
static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

const WIDTH: u32 = 960;
const HEIGHT: u32 = 640;

/// The picture's file type, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Scalable vector graphics.
    Svg,
    /// A PNG bitmap.
    Png,
}

impl Kind {
    /// The kind a file name asks for, by its extension.
    pub fn of(path: &Path) -> Option<Kind> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        match extension.as_str() {
            "svg" => Some(Kind::Svg),
            "png" => Some(Kind::Png),
            _ => None,
        }
    }
}

/// One strategy's point.
struct Point {
    label: String,
    cost: f64,
    loss: f64,
    on_frontier: bool,
}

fn points(report: &Report) -> Vec<Point> {
    let frontier = report.frontier();
    report
        .totals()
        .into_iter()
        .filter_map(|total| {
            let cost = total.figures.cost_usd?;
            let loss = 100.0 * (total.figures.evicted_share() + total.figures.refetch_share());
            Some(Point {
                on_frontier: frontier.contains(&total.label),
                label: total.label,
                cost,
                loss,
            })
        })
        .collect()
}

/// Fails when `path` cannot be written, leaving it as it was: an existing file is opened to
/// append (never truncated, nothing written), a missing one is created and removed again, so a
/// run that reads nothing leaves no empty picture behind.
pub fn check_writable(path: &Path) -> Result<()> {
    let cannot = || format!("--plot: cannot write {}", path.display());
    if path.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .with_context(cannot)?;
    } else {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .with_context(cannot)?;
        std::fs::remove_file(path).with_context(cannot)?;
    }
    Ok(())
}

/// Draws the report's totals to `path`.
pub fn draw(report: &Report, path: &Path, kind: Kind) -> Result<()> {
    let points = points(report);
    if points.is_empty() {
        return Err(anyhow!(
            "--plot: no strategy has a cost (no session had a price)"
        ));
    }
    // Both backends measure text with the registered font (the SVG one to place labels).
    // Registering twice replaces the same bytes; the error is only for a bad font.
    plotters::style::register_font("sans-serif", FontStyle::Normal, FONT)
        .map_err(|_| anyhow!("--plot: the embedded font cannot be read"))?;
    match kind {
        Kind::Svg => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
                chart(&root, &points, report.sessions.len())?;
                root.present().map_err(|error| anyhow!("--plot: {error}"))?;
            }
            std::fs::write(path, svg)
                .with_context(|| format!("--plot: cannot write {}", path.display()))?;
        }
        Kind::Png => {
            // Drawn beside the file and moved over it once whole: the bitmap backend writes
            // its file when dropped, so a chart that fails half-way would leave half a picture.
            let partial = partial_path(path);
            let drawn = (|| {
                let root = BitMapBackend::new(&partial, (WIDTH, HEIGHT)).into_drawing_area();
                chart(&root, &points, report.sessions.len())?;
                root.present()
                    .map_err(|error| anyhow!("--plot: cannot write {}: {error}", partial.display()))
            })();
            let moved = drawn.and_then(|()| {
                std::fs::rename(&partial, path)
                    .with_context(|| format!("--plot: cannot write {}", path.display()))
            });
            if moved.is_err() {
                let _ = std::fs::remove_file(&partial);
            }
            moved?;
        }
    }
    Ok(())
}

/// The hidden sibling a PNG is drawn to: `dir/.NAME.partial.png` (the backend reads the format
/// from the extension).
fn partial_path(path: &Path) -> std::path::PathBuf {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.partial.png"))
}

fn chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    points: &[Point],
    sessions: usize,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let failed = |error: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("--plot: {error}");
    root.fill(&WHITE).map_err(failed)?;
    let max_cost = points.iter().map(|p| p.cost).fold(0.0_f64, f64::max);
    let max_loss = points.iter().map(|p| p.loss).fold(0.0_f64, f64::max);
    let x_end = if max_cost > 0.0 { max_cost * 1.3 } else { 1.0 };
    let y_end = if max_loss > 0.0 { max_loss * 1.2 } else { 1.0 };
    let caption = format!("cost against loss, {sessions} recorded session(s)");
    let mut chart = ChartBuilder::on(root)
        .caption(caption, ("sans-serif", 22))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_end, 0.0..y_end)
        .map_err(failed)?;
    chart
        .configure_mesh()
        .x_desc("cost, US $ (prompt cache counted)")
        .y_desc("loss: evicted-before-use + re-fetch, %")
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(failed)?;
    let mut frontier: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.on_frontier)
        .map(|p| (p.cost, p.loss))
        .collect();
    frontier.sort_by(|a, b| a.0.total_cmp(&b.0));
    chart
        .draw_series(LineSeries::new(frontier, RED.stroke_width(2)))
        .map_err(failed)?
        .label("frontier")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.stroke_width(2)));
    let font = ("sans-serif", 14).into_font().color(&BLACK);
    let mut wanted = Vec::with_capacity(points.len());
    for point in points {
        let marker = if point.on_frontier {
            RED.filled()
        } else {
            BLUE.stroke_width(2)
        };
        let element = EmptyElement::at((point.cost, point.loss)) + Circle::new((0, 0), 6, marker);
        chart
            .draw_series(std::iter::once(element))
            .map_err(failed)?;
        let (x, y) = chart.backend_coord(&(point.cost, point.loss));
        let (width, _) = root
            .estimate_text_size(&point.label, &font)
            .map_err(failed)?;
        wanted.push(LabelBox {
            x: x + 10,
            y: y - 18,
            width: i32::try_from(width).unwrap_or(i32::MAX),
        });
    }
    // Labels of nearby strategies would print over each other: each is moved down until
    // it clears the ones above it, and tied to its point by a leader line when moved.
    let placed = place_labels(&wanted, LABEL_HEIGHT);
    for ((point, want), y) in points.iter().zip(&wanted).zip(placed) {
        if y != want.y {
            let (x0, y0) = chart.backend_coord(&(point.cost, point.loss));
            root.draw(&PathElement::new(
                vec![(x0 + 4, y0), (want.x - 2, y + LABEL_HEIGHT / 2)],
                BLACK.mix(0.5).stroke_width(1),
            ))
            .map_err(failed)?;
        }
        root.draw(&Text::new(point.label.clone(), (want.x, y), font.clone()))
            .map_err(failed)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(failed)?;
    Ok(())
}

/// The height a label takes, text and gap, in pixels (14-pixel text).
const LABEL_HEIGHT: i32 = 17;

/// Where a label wants to go: its top-left corner and width, in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LabelBox {
    x: i32,
    y: i32,
    width: i32,
}

/// The top of each label (in the order given) so that no two overlap: taken from the highest
/// wanted position down, each label keeps its place unless a label already placed covers
/// some of its columns within `height` of it, and then goes just below that one, again and
/// again until it is clear. Labels that share no column never move each other.
fn place_labels(wanted: &[LabelBox], height: i32) -> Vec<i32> {
    let mut order: Vec<usize> = (0..wanted.len()).collect();
    order.sort_by_key(|&index| (wanted[index].y, wanted[index].x, index));
    let mut placed: Vec<(LabelBox, i32)> = Vec::with_capacity(wanted.len());
    let mut tops = vec![0; wanted.len()];
    for index in order {
        let label = wanted[index];
        let mut top = label.y;
        // Each pass moves the label below one placed label it overlapped; as `top` only grows,
        // no label is passed twice.
        while let Some(lowest) = placed
            .iter()
            .filter(|(other, other_top)| {
                label.x < other.x + other.width
                    && other.x < label.x + label.width
                    && top < other_top + height
                    && *other_top < top + height
            })
            .map(|(_, other_top)| other_top + height)
            .max()
        {
            top = lowest;
        }
        tops[index] = top;
        placed.push((label, top));
    }
    tops
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(x: i32, y: i32) -> LabelBox {
        LabelBox { x, y, width: 100 }
    }

    #[test]
    fn labels_are_pushed_apart_only_where_they_would_overlap() {
        let cases: Vec<(&str, Vec<LabelBox>, Vec<i32>)> = vec![
            ("none", vec![], vec![]),
            ("one stays", vec![at(10, 40)], vec![40]),
            (
                "far apart stay",
                vec![at(10, 40), at(10, 100)],
                vec![40, 100],
            ),
            (
                "side by side stay",
                vec![at(10, 40), at(200, 42)],
                vec![40, 42],
            ),
            (
                "two close: the lower moves",
                vec![at(10, 40), at(20, 45)],
                vec![40, 57],
            ),
            (
                "given out of order",
                vec![at(20, 45), at(10, 40)],
                vec![57, 40],
            ),
            (
                "five clustered stack",
                vec![at(10, 50), at(15, 52), at(12, 51), at(18, 55), at(11, 49)],
                vec![66, 100, 83, 117, 49],
            ),
            (
                "a moved label pushes the next",
                vec![at(10, 40), at(10, 50), at(10, 60)],
                vec![40, 57, 74],
            ),
            ("same spot", vec![at(10, 40), at(10, 40)], vec![40, 57]),
        ];
        for (case, wanted, expected) in cases {
            let tops = place_labels(&wanted, 17);
            assert_eq!(tops, expected, "{case}");
            for (i, a) in wanted.iter().enumerate() {
                for (j, b) in wanted.iter().enumerate().skip(i + 1) {
                    let columns = a.x < b.x + b.width && b.x < a.x + a.width;
                    assert!(
                        !columns || (tops[i] - tops[j]).abs() >= 17,
                        "{case}: labels {i} and {j} overlap"
                    );
                }
            }
        }
    }
}
