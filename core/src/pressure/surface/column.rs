//! A column of `u64`s kept as `u32` offsets from a base while every value fits: half the
//! memory for a surface's seqs (one session's, close together) and tokens (small).

#[derive(Debug, Clone)]
pub(super) enum Column {
    /// Values `base + v[i]`. With `floating`, the first value pushed sets the base.
    Narrow {
        base: u64,
        floating: bool,
        v: Vec<u32>,
    },
    Wide(Vec<u64>),
}

impl Column {
    /// An empty column with room for `n`; `floating`: the first value pushed is the base (for
    /// ascending values), else the base is 0.
    pub(super) fn with_capacity(n: usize, floating: bool) -> Column {
        Column::Narrow {
            base: 0,
            floating,
            v: Vec::with_capacity(n),
        }
    }

    pub(super) fn len(&self) -> usize {
        match self {
            Column::Narrow { v, .. } => v.len(),
            Column::Wide(v) => v.len(),
        }
    }

    pub(super) fn get(&self, i: usize) -> u64 {
        match self {
            Column::Narrow { base, v, .. } => base + v[i] as u64,
            Column::Wide(v) => v[i],
        }
    }

    pub(super) fn push(&mut self, x: u64) {
        match self {
            Column::Narrow { base, floating, v } => {
                if v.is_empty() && *floating {
                    *base = x;
                }
                match x.checked_sub(*base).and_then(|d| u32::try_from(d).ok()) {
                    Some(d) => v.push(d),
                    None => {
                        self.widen();
                        self.push(x);
                    }
                }
            }
            Column::Wide(v) => v.push(x),
        }
    }

    /// Stores values as `u64` from now on (a value did not fit the base).
    fn widen(&mut self) {
        if let Column::Narrow { base, v, .. } = self {
            let mut w = Vec::with_capacity(v.capacity().max(v.len() + 1));
            w.extend(v.iter().map(|&d| *base + d as u64));
            *self = Column::Wide(w);
        }
    }

    /// Where `x` stands in an ascending column, as `slice::binary_search` says.
    pub(super) fn binary_search(&self, x: u64) -> Result<usize, usize> {
        match self {
            Column::Narrow { base, v, .. } => match x.checked_sub(*base) {
                None => Err(0),
                Some(d) => match u32::try_from(d) {
                    Ok(d) => v.binary_search(&d),
                    Err(_) => Err(v.len()),
                },
            },
            Column::Wide(v) => v.binary_search(&x),
        }
    }

    /// The column of `self`'s values at `at`, in that order, as narrow as they allow.
    pub(super) fn gather(&self, at: impl ExactSizeIterator<Item = u32>, floating: bool) -> Column {
        let mut out = Column::with_capacity(at.len(), floating);
        for i in at {
            out.push(self.get(i as usize));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_while_values_fit_then_wide() {
        let mut c = Column::with_capacity(2, true);
        c.push(1 << 40);
        c.push((1 << 40) + u32::MAX as u64);
        assert!(matches!(c, Column::Narrow { .. }));
        assert_eq!(c.binary_search((1 << 40) + u32::MAX as u64), Ok(1));
        assert_eq!(c.binary_search(3), Err(0));
        assert_eq!(c.binary_search(u64::MAX), Err(2));
        c.push(u64::MAX);
        assert!(matches!(c, Column::Wide(_)));
        assert_eq!(
            (0..3).map(|i| c.get(i)).collect::<Vec<_>>(),
            [1 << 40, (1 << 40) + u32::MAX as u64, u64::MAX]
        );
        // Below a floating base: wide too.
        let mut d = Column::with_capacity(0, true);
        d.push(10);
        d.push(9);
        assert_eq!((d.get(0), d.get(1)), (10, 9));
        assert!(matches!(d, Column::Wide(_)));
        // A fixed base of 0 stays narrow for small values in any order.
        let mut t = Column::with_capacity(0, false);
        for x in [500, 3, u32::MAX as u64] {
            t.push(x);
        }
        assert!(matches!(t, Column::Narrow { .. }));
        let g = t.gather([2, 0].into_iter(), false);
        assert_eq!((g.len(), g.get(0), g.get(1)), (2, u32::MAX as u64, 500));
    }
}
