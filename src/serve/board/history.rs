//! A session's history as the board keeps it: bounded and downsampled, so that a page opened at
//! any time draws the session's whole chart.
//!
//! What holds: a session keeps at most [`POINTS`] points of [`POINT_BYTES`] each (16 KiB).
//! Every provider reading (a point whose `pressureTokens` differs from the point before) and
//! every compaction is kept while they number at most [`KEPT`]; the projection between them is
//! what thins (every second plain point goes when the bound is reached). Past [`KEPT`] readings
//! are thinned too, and past [`POINTS`] compactions the oldest go.

use serde::Serialize;

/// The most points one session keeps.
pub(crate) const POINTS: usize = 512;

/// Readings and compactions kept whole: the rest of the bound is room for the projection.
pub(crate) const KEPT: usize = POINTS * 7 / 8;

/// The size of one point in memory.
pub(crate) const POINT_BYTES: usize = std::mem::size_of::<Point>();

/// `u32::MAX` stands for null in a point's token fields.
const NULL: u32 = u32::MAX;
/// In `flags`: the point is a compaction (the surface shrank, contract §3.1).
const COMPACTION: u8 = 1;
/// In `flags`: the point is a provider reading (contract §3.2).
const READING: u8 = 2;

/// One applied pressure record: its seq and the figures a chart draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Point {
    seq: u64,
    projected: u32,
    pressure: u32,
    capacity: u32,
    compact_at: u32,
    flags: u8,
}

fn pack(v: Option<u64>) -> u32 {
    v.map_or(NULL, |n| u32::try_from(n).unwrap_or(NULL - 1))
}

fn unpack(v: u32) -> Option<u64> {
    (v != NULL).then_some(u64::from(v))
}

/// What a pressure record gives the history.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct HistorySample {
    pub seq: u64,
    pub projected: Option<u64>,
    pub pressure: Option<u64>,
    pub capacity: Option<u64>,
    pub compact_at: Option<u64>,
    /// `messageTokens`: only ever falls at a compaction's replacement (contract §3.1).
    pub message: Option<u64>,
}

/// One point as the page gets it: `[seq, projected, pressure, capacity, compactAt, compaction]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct ShownPoint(
    pub u64,
    pub Option<u64>,
    pub Option<u64>,
    pub Option<u64>,
    pub Option<u64>,
    pub u8,
);

/// A session's history.
#[derive(Debug, Clone, Default)]
pub(crate) struct History {
    points: Vec<Point>,
    /// The last record's figures: a compaction is told against them.
    last: Option<HistorySample>,
}

impl History {
    /// Points held.
    pub(crate) fn len(&self) -> usize {
        self.points.len()
    }

    /// Bytes held (for the board's bound and `/metrics`).
    pub(crate) fn bytes(&self) -> usize {
        self.points.capacity() * POINT_BYTES
    }

    /// Adds a record's figures; an older or equal seq than the last replaces nothing and is
    /// dropped (a re-delivery), an equal seq updates the last point. Returns the change in the
    /// number of points held (thinning can make it negative).
    pub(crate) fn add(&mut self, f: HistorySample) -> isize {
        let before = self.points.len() as isize;
        let prev = self.last;
        if let Some(p) = prev
            && f.seq < p.seq
        {
            return 0;
        }
        let compaction = prev.is_some_and(|p| compacted(&p, &f));
        let reading = f.pressure.is_some() && prev.is_none_or(|p| p.pressure != f.pressure);
        let point = Point {
            seq: f.seq,
            projected: pack(f.projected),
            pressure: pack(f.pressure),
            capacity: pack(f.capacity),
            compact_at: pack(f.compact_at),
            flags: (u8::from(compaction) * COMPACTION) | (u8::from(reading) * READING),
        };
        match self.points.last_mut() {
            Some(last) if last.seq == f.seq => {
                let flags = last.flags | point.flags;
                *last = Point { flags, ..point };
            }
            _ => self.points.push(point),
        }
        self.last = Some(f);
        if self.points.len() > POINTS {
            self.thin();
        }
        self.points.len() as isize - before
    }

    /// Halves what can go: plain points first, then (when readings and compactions alone pass
    /// [`KEPT`]) readings too, then compactions; a dropped point's marks go to the next point
    /// kept. The first and the newest point stay.
    fn thin(&mut self) {
        for keep in [READING | COMPACTION, COMPACTION, 0] {
            let n = self.points.len();
            let mut out: Vec<Point> = Vec::with_capacity(POINTS + 1);
            // Every second point that may go does, counted over them alone: the ones between
            // kept points thin as the ones in a run do.
            let (mut kept_last, mut carry) = (false, 0);
            for (i, p) in self.points.iter().enumerate() {
                let key = p.flags & keep != 0 || i == 0 || i + 1 == n;
                if !key {
                    kept_last = !kept_last;
                    if !kept_last {
                        carry |= p.flags;
                        continue;
                    }
                }
                out.push(Point {
                    flags: p.flags | carry,
                    ..*p
                });
                carry = 0;
            }
            self.points = out;
            if self.points.len() <= KEPT {
                break;
            }
        }
        self.points.shrink_to(POINTS + 1);
    }

    /// The points after `after` (all of them for `None`), oldest first.
    pub(crate) fn shown(&self, after: Option<u64>) -> Vec<ShownPoint> {
        let start = match after {
            Some(s) => self.points.partition_point(|p| p.seq <= s),
            None => 0,
        };
        self.points[start..]
            .iter()
            .map(|p| {
                ShownPoint(
                    p.seq,
                    unpack(p.projected),
                    unpack(p.pressure),
                    unpack(p.capacity),
                    unpack(p.compact_at),
                    p.flags & COMPACTION,
                )
            })
            .collect()
    }

    /// Up to `n` projections spread evenly over the whole history, oldest first: a sparkline.
    pub(crate) fn spark(&self, n: usize) -> Vec<Option<u64>> {
        let len = self.points.len();
        if len <= n {
            return self.points.iter().map(|p| unpack(p.projected)).collect();
        }
        (0..n)
            .map(|i| {
                let at = i * (len - 1) / (n - 1).max(1);
                unpack(self.points[at].projected)
            })
            .collect()
    }
}

/// A compaction, from what the records say (the page's chart tells it the same way): the
/// surface shrank (`messageTokens` falls only at a replacement), or where the surface is unknown
/// (a partial session) the projection fell while the provider's reading held.
fn compacted(prev: &HistorySample, now: &HistorySample) -> bool {
    match (prev.message, now.message) {
        (Some(a), Some(b)) => b < a,
        _ => {
            matches!((prev.projected, now.projected), (Some(a), Some(b)) if b < a)
                && prev.pressure == now.pressure
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seqs of the shown points marked as compactions.
    fn marked(h: &History) -> Vec<u64> {
        h.shown(None)
            .iter()
            .filter(|p| p.5 == 1)
            .map(|p| p.0)
            .collect()
    }

    fn fig(seq: u64, projected: u64, pressure: u64, message: u64) -> HistorySample {
        HistorySample {
            seq,
            projected: Some(projected),
            pressure: Some(pressure),
            capacity: Some(200_000),
            compact_at: Some(167_000),
            message: Some(message),
        }
    }

    #[test]
    fn readings_and_compactions_are_marked_and_a_redelivery_changes_nothing() {
        let mut h = History::default();
        h.add(fig(1, 100, 100, 10));
        h.add(fig(2, 150, 100, 60));
        h.add(fig(3, 200, 180, 70));
        h.add(fig(4, 90, 180, 20));
        assert_eq!(h.add(fig(2, 1, 1, 1)), 0, "an older seq is a re-delivery");
        let s = h.shown(None);
        let flags: Vec<(u64, u8)> = s.iter().map(|p| (p.0, p.5)).collect();
        assert_eq!(flags, [(1, 0), (2, 0), (3, 0), (4, 1)]);
        let readings: Vec<u64> = h
            .points
            .iter()
            .filter(|p| p.flags & READING != 0)
            .map(|p| p.seq)
            .collect();
        assert_eq!(readings, [1, 3]);
        assert_eq!(
            h.shown(Some(2)).iter().map(|p| p.0).collect::<Vec<_>>(),
            [3, 4]
        );
    }

    #[test]
    fn an_equal_seq_updates_the_last_point() {
        let mut h = History::default();
        h.add(fig(1, 100, 100, 10));
        assert_eq!(h.add(fig(1, 120, 100, 10)), 0);
        assert_eq!(
            h.shown(None),
            [ShownPoint(
                1,
                Some(120),
                Some(100),
                Some(200_000),
                Some(167_000),
                0
            )]
        );
    }

    /// A long session: the bound holds, and every reading and compaction survives while they
    /// alone fit; the projection between them is what thins.
    #[test]
    fn thinning_keeps_every_reading_and_compaction_within_the_bound() {
        let mut h = History::default();
        let mut readings = Vec::new();
        let mut compactions = Vec::new();
        let (mut pressure, mut message) = (1_000, 0);
        for seq in 0..20_000u64 {
            message += 10;
            if seq % 97 == 0 {
                pressure = 1_000 + message;
                readings.push(seq);
            }
            if seq % 1_013 == 500 {
                message /= 3;
                compactions.push(seq);
            }
            h.add(fig(seq, pressure + 5, pressure, message));
            assert!(h.len() <= POINTS, "at seq {seq}: {} points", h.len());
        }
        assert!(readings.len() + compactions.len() < POINTS);
        let kept: Vec<u64> = h.points.iter().map(|p| p.seq).collect();
        for r in readings.iter().chain(&compactions) {
            assert!(kept.contains(r), "seq {r} was thinned away");
        }
        assert_eq!(marked(&h), compactions);
        assert_eq!(kept.last(), Some(&19_999), "the newest point stays");
        assert!(h.bytes() <= (POINTS + 1) * POINT_BYTES);
    }

    /// When readings alone overflow the bound, the oldest are thinned; the bound still holds and
    /// compactions survive.
    #[test]
    fn readings_past_the_bound_thin_and_compactions_stay() {
        let mut h = History::default();
        let mut message = 0;
        let mut compactions = Vec::new();
        for seq in 0..5_000u64 {
            message += 10;
            if seq % 700 == 1 {
                message = 5;
                compactions.push(seq);
            }
            h.add(fig(seq, seq + 1, seq, message));
            assert!(h.len() <= POINTS);
        }
        assert_eq!(marked(&h), compactions);
    }

    #[test]
    fn a_spark_spreads_over_the_whole_history() {
        let mut h = History::default();
        for seq in 0..100 {
            h.add(fig(seq, seq * 10, 0, seq));
        }
        let s = h.spark(5);
        assert_eq!(s, [Some(0), Some(240), Some(490), Some(740), Some(990)]);
        assert_eq!(History::default().spark(5), Vec::<Option<u64>>::new());
    }
}
