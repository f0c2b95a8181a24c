//! `--plot FILE.svg`: a session's context pressure as a picture.
//!
//! One panel per session (the busiest first, at most [`MAX_PANELS`]): `pressureTokens` as steps
//! at each provider reading (dots mark the readings), `projectedTokens` as a line through every
//! record, the capacity as a dashed line, and each compaction as a dashed vertical marker
//! labelled `compaction`. The x axis is time since the session's first record when every
//! record is stamped (clamped to never run backwards: logs carry a few late lines with early
//! stamps), else the frames' `seq`.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use agent_fold_core::{Frame, session_key};
use anyhow::{Result, anyhow};
use plotters::prelude::*;
use serde_json::Value;

use crate::record::Rec;

pub(crate) const MAX_PANELS: usize = 6;

pub const PRESSURE: RGBColor = RGBColor(31, 119, 180);
pub const PROJECTED: RGBColor = RGBColor(255, 127, 14);
pub const CAPACITY: RGBColor = RGBColor(214, 39, 40);
pub const COMPACTION: RGBColor = RGBColor(148, 103, 189);

/// What one frame means to the plot: a provider reading, a compaction, or neither.
#[derive(Debug, Default)]
pub(crate) struct Marks {
    samples: HashSet<(String, u64)>,
    compactions: HashSet<(String, u64)>,
}

impl Marks {
    /// Notes the readings and compactions among frames fed to the pressure view.
    pub(crate) fn note(&mut self, frames: &[Rec]) {
        for r in frames {
            let Some(v) = Frame::parse(&r.value) else {
                continue;
            };
            let (Some(seq), false) = (v.seq(), v.is_subagent()) else {
                continue;
            };
            let session =
                String::from_utf8_lossy(&session_key(r.key.as_deref(), Some(&v))).into_owned();
            if v.replaces().is_some() {
                self.compactions.insert((session.clone(), seq));
            }
            if v.kind() == Some("assistant/message") && v.usage().is_some() {
                self.samples.insert((session, seq));
            }
        }
    }
}

/// One session's figures over its log.
#[derive(Debug, Clone, Default)]
pub(crate) struct Panel {
    pub session: String,
    pub x_label: String,
    /// `(x, pressureTokens, projectedTokens)` of each `context/pressure` record.
    pub points: Vec<(f64, Option<f64>, Option<f64>)>,
    /// `(x, pressureTokens)` at each provider reading.
    pub readings: Vec<(f64, f64)>,
    pub capacity: Option<f64>,
    pub compactions: Vec<f64>,
}

/// The panels of a run: its `context/pressure` records, with the marks of its frames.
pub(crate) fn panels(pressure: &[Rec], marks: &Marks) -> Vec<Panel> {
    struct Row {
        seq: u64,
        stamp: Option<f64>,
        pressure: Option<f64>,
        projected: Option<f64>,
        capacity: Option<f64>,
    }
    let mut order: Vec<String> = Vec::new();
    let mut rows: HashMap<String, Vec<Row>> = HashMap::new();
    for r in pressure {
        let Ok(v) = serde_json::from_slice::<Value>(&r.value) else {
            continue;
        };
        if v.get("type").and_then(Value::as_str) != Some("context/pressure") {
            continue;
        }
        let session = v
            .get("session")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let num = |k: &str| v.get(k).and_then(Value::as_f64);
        let Some(seq) = v.get("seq").and_then(Value::as_u64) else {
            continue;
        };
        if !rows.contains_key(&session) {
            order.push(session.clone());
        }
        rows.entry(session).or_default().push(Row {
            seq,
            stamp: v
                .get("timestamp")
                .and_then(Value::as_str)
                .and_then(agent_fold_core::time::parse_secs),
            pressure: num("pressureTokens"),
            projected: num("projectedTokens"),
            capacity: num("capacity"),
        });
    }
    let mut out: Vec<Panel> = order
        .into_iter()
        .map(|session| {
            let rows = &rows[&session];
            let timed = rows.iter().all(|r| r.stamp.is_some());
            let t0 = rows.first().and_then(|r| r.stamp).unwrap_or(0.0);
            let span = rows
                .iter()
                .filter_map(|r| r.stamp)
                .fold(0.0f64, |m, t| m.max(t - t0));
            let (unit, label) = if !timed {
                (1.0, "frame seq".to_owned())
            } else if span > 3.0 * 3600.0 {
                (3600.0, "hours since the session's first record".to_owned())
            } else {
                (60.0, "minutes since the session's first record".to_owned())
            };
            let mut panel = Panel {
                session: session.clone(),
                x_label: label,
                ..Panel::default()
            };
            let mut last_x = f64::NEG_INFINITY;
            for r in rows {
                let x = match (timed, r.stamp) {
                    (true, Some(t)) => ((t - t0) / unit).max(last_x),
                    _ => r.seq as f64,
                };
                last_x = x;
                panel.points.push((x, r.pressure, r.projected));
                let key = (session.clone(), r.seq);
                if marks.samples.contains(&key)
                    && let Some(p) = r.pressure
                {
                    panel.readings.push((x, p));
                }
                if marks.compactions.contains(&key) {
                    panel.compactions.push(x);
                }
                if r.capacity.is_some() {
                    panel.capacity = r.capacity;
                }
            }
            panel
        })
        .collect();
    out.sort_by_key(|p| std::cmp::Reverse(p.points.len()));
    out
}

fn tokens_label(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format!("{:.0}k", v / 1000.0)
    } else {
        format!("{v:.0}")
    }
}

/// Draws the panels (at most [`MAX_PANELS`]) into an SVG file.
pub(crate) fn render(path: &Path, panels: &[Panel]) -> Result<()> {
    let svg = render_string(panels)?;
    std::fs::write(path, svg).map_err(|e| anyhow!("writing {}: {e}", path.display()))
}

/// The SVG text of the panels.
pub(crate) fn render_string(panels: &[Panel]) -> Result<String> {
    let panels = &panels[..panels.len().min(MAX_PANELS)];
    let mut svg = String::new();
    {
        let n = panels.len().max(1);
        let root = SVGBackend::with_string(&mut svg, (1200, 520 * n as u32)).into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| anyhow!("drawing the plot: {e}"))?;
        if panels.is_empty() {
            root.draw(&Text::new(
                "no context/pressure records: nothing to plot",
                (40, 40),
                ("sans-serif", 20),
            ))
            .map_err(|e| anyhow!("drawing the plot's title: {e}"))?;
        }
        for (area, p) in root.split_evenly((n, 1)).iter().zip(panels) {
            draw_panel(area, p).map_err(|e| anyhow!("drawing the plot: {e}"))?;
        }
        root.present()
            .map_err(|e| anyhow!("writing the plot: {e}"))?;
    }
    Ok(svg)
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    p: &Panel,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let x0 = p.points.first().map_or(0.0, |q| q.0);
    let mut x1 = p.points.last().map_or(1.0, |q| q.0);
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let top = p
        .points
        .iter()
        .flat_map(|q| [q.1, q.2])
        .flatten()
        .chain(p.capacity)
        .fold(1.0f64, f64::max)
        * 1.08;
    let caption = format!(
        "context pressure · session {} · {} provider readings{}{}",
        p.session,
        p.readings.len(),
        match p.compactions.len() {
            0 => String::new(),
            1 => " · 1 compaction".to_owned(),
            n => format!(" · {n} compactions"),
        },
        match p.capacity {
            Some(_) => "",
            None => " · capacity unknown (-e capacity=N)",
        }
    );
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x0..x1, 0f64..top)?;
    chart
        .configure_mesh()
        .x_desc(p.x_label.as_str())
        .y_desc("tokens")
        .y_label_formatter(&|v| tokens_label(*v))
        .light_line_style(RGBColor(246, 246, 246))
        .draw()?;

    if let Some(cap) = p.capacity {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x0, cap), (x1, cap)],
                8,
                5,
                CAPACITY.stroke_width(2),
            ))?
            .label(format!("capacity {}", tokens_label(cap)))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], CAPACITY.stroke_width(2)));
    }

    // pressureTokens: a step at each new figure, flat in between.
    let mut steps: Vec<(f64, f64)> = Vec::new();
    for &(x, pressure, _) in &p.points {
        let Some(v) = pressure else { continue };
        if let Some(&(_, prev)) = steps.last()
            && prev != v
        {
            steps.push((x, prev));
        }
        steps.push((x, v));
    }
    if let Some(&(_, last)) = steps.last() {
        steps.push((x1, last));
    }
    chart
        .draw_series(LineSeries::new(steps, PRESSURE.stroke_width(2)))?
        .label("pressureTokens (the provider's reading)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], PRESSURE.stroke_width(2)));
    chart.draw_series(
        p.readings
            .iter()
            .map(|&(x, v)| Circle::new((x, v), 2, PRESSURE.filled())),
    )?;

    // projectedTokens: the reading plus what joined the surface since, held until the next
    // record (steps too); a gap where it is null.
    let mut segments: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for &(x, _, projected) in &p.points {
        let seg = segments.last_mut().expect("one segment at least");
        match projected {
            Some(v) => {
                if let Some(&(_, prev)) = seg.last()
                    && prev != v
                {
                    seg.push((x, prev));
                }
                seg.push((x, v));
            }
            None => {
                if let Some(&(_, prev)) = seg.last() {
                    seg.push((x, prev));
                    segments.push(Vec::new());
                }
            }
        }
    }
    if let Some(seg) = segments.last_mut()
        && let Some(&(_, prev)) = seg.last()
    {
        seg.push((x1, prev));
    }
    for (i, seg) in segments.into_iter().filter(|s| !s.is_empty()).enumerate() {
        let drawn = chart.draw_series(LineSeries::new(seg, PROJECTED.stroke_width(2)))?;
        if i == 0 {
            drawn
                .label("projectedTokens (reading + calibrated estimate of what joined since)")
                .legend(|(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], PROJECTED.stroke_width(2))
                });
        }
    }

    for (i, &x) in p.compactions.iter().enumerate() {
        let drawn = chart.draw_series(DashedLineSeries::new(
            vec![(x, 0.0), (x, top)],
            6,
            4,
            COMPACTION.stroke_width(2),
        ))?;
        if i == 0 {
            drawn.label("compaction").legend(|(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], COMPACTION.stroke_width(2))
            });
        }
        chart.draw_series(std::iter::once(Text::new(
            "compaction",
            (x, top * 0.985),
            ("sans-serif", 14).into_font().color(&COMPACTION),
        )))?;
    }

    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(200, 200, 200))
        .draw()?;
    Ok(())
}
