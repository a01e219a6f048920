//! Data sets: the rows of a scenario's data files, held once per run and shared by every VU
//! and thread, and the policy that hands them out ([`Data::take`]).
//!
//! A CSV file reaches the engine as its text (the plan carries it once; Python reads only
//! its header) and is parsed here into [`Rows`]: one buffer of cell text and one end offset
//! per cell, so a million-row file costs its size plus four bytes a cell, where a `String`
//! per cell cost 24 bytes and a heap block each. Rows are handed out through one atomic
//! cursor per set, shared by the run's threads: a row taken by one thread is never taken by
//! another, and every row is used before the set runs out, however unevenly the threads'
//! VUs progress (disjoint per-thread shares would leave one thread idle with rows left in
//! another's share). The cost is one `fetch_add` per iteration. Across injectors of a
//! cluster, which share no memory, the split deals each one a disjoint slice
//! ([`DataSpec::slice`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::rng::Rng;
use super::spec::DataSpec;

/// Order is how rows are picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Sequential: in file order.
    Sequential,
    /// Random: a random row each time (with `unique`, a random permutation of the rows).
    Random,
}

/// OnExhausted is what happens when a set has handed out every row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnExhausted {
    /// Recycle: start over from the first row (the default of a set that is not unique).
    Recycle,
    /// Stop: the VU that finds no row stops; the run ends when the last one has (the default
    /// of a unique set).
    Stop,
    /// Error: the iteration that finds no row fails (its reason: no row left).
    Error,
}

impl OnExhausted {
    /// name: the policy as the plan and the report spell it.
    pub fn name(self) -> &'static str {
        match self {
            OnExhausted::Recycle => "recycle",
            OnExhausted::Stop => "stop",
            OnExhausted::Error => "error",
        }
    }
}

/// Rows is a table of text: every cell in one buffer, with each cell's end offset.
#[derive(Debug, Clone, Default)]
pub struct Rows {
    text: String,
    ends: Vec<u32>,
    width: usize,
}

impl Rows {
    /// len: the number of rows.
    pub fn len(&self) -> usize {
        self.ends.len().checked_div(self.width).unwrap_or(0)
    }

    /// is_empty: no rows.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// row: the cells of row `i`.
    pub fn row(&self, i: usize) -> impl Iterator<Item = &str> {
        let first = i * self.width;
        (first..first + self.width).map(move |c| {
            let start = if c == 0 { 0 } else { self.ends[c - 1] as usize };
            &self.text[start..self.ends[c] as usize]
        })
    }

    /// push appends a row (as wide as the others); false when the text outgrows the offsets.
    fn push<'a>(&mut self, cells: impl Iterator<Item = &'a str>) -> bool {
        for c in cells {
            self.text.push_str(c);
            let Ok(end) = u32::try_from(self.text.len()) else {
                return false;
            };
            self.ends.push(end);
        }
        true
    }
}

/// State is a set's run-wide progress, shared by every thread (the script is shared).
#[derive(Debug, Default)]
struct State {
    /// cursor: rows handed out so far (past the end once the set has run out).
    cursor: AtomicU64,
    /// draws: random draws of a set that is not unique.
    draws: AtomicU64,
    /// missed: iterations that found no row (`on_exhausted="error"`).
    missed: AtomicU64,
    /// used_up: some VU found no row left.
    used_up: AtomicBool,
}

/// Data is a data set: the slots its columns fill, its rows, and how they are handed out.
#[derive(Debug, Clone)]
pub struct Data {
    /// name: the set's name.
    pub name: String,
    /// per_vu: one row per VU (else the next row each iteration).
    pub per_vu: bool,
    /// slots: the variable of each column.
    pub slots: Vec<usize>,
    /// rows: the rows this run holds (its slice of the file in a cluster).
    pub rows: Rows,
    /// order: how rows are picked.
    pub order: Order,
    /// unique: each row is used at most once in the run.
    pub unique: bool,
    /// on_exhausted: what happens when the rows run out.
    pub on_exhausted: OnExhausted,
    /// perm: the shuffled row order of a random unique set (empty otherwise).
    perm: Vec<u32>,
    state: Arc<State>,
}

/// DataReport is a data set's line in the report: how many rows it held and handed out.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DataReport {
    /// rows: the rows this run held.
    pub rows: u64,
    /// taken: rows handed out (with `recycle` or a random order, a row counts each time).
    pub taken: u64,
    /// used_up: the set ran out of rows (`stop`: the VUs stopped there).
    pub used_up: bool,
    /// missed: iterations that failed for want of a row (`on_exhausted="error"`).
    pub missed: u64,
    /// unique: each row used at most once.
    pub unique: bool,
    /// order: `sequential` or `random`.
    pub order: &'static str,
    /// on_exhausted: `recycle`, `stop` or `error`.
    pub on_exhausted: &'static str,
}

impl Data {
    /// build resolves a data set spec whose columns fill `slots`; errors are messages for
    /// the builder to place.
    pub fn build(d: &DataSpec, slots: Vec<usize>) -> Result<Data, String> {
        let per_vu = match d.per.as_str() {
            "vu" => true,
            "iteration" => false,
            other => return Err(format!("per must be iteration or vu, got {other:?}")),
        };
        let order = match d.order.as_str() {
            "sequential" => Order::Sequential,
            "random" => Order::Random,
            other => return Err(format!("order must be sequential or random, got {other:?}")),
        };
        let on_exhausted = match d.on_exhausted.as_deref() {
            None if d.unique => OnExhausted::Stop,
            None | Some("recycle") => OnExhausted::Recycle,
            Some("stop") => OnExhausted::Stop,
            Some("error") => OnExhausted::Error,
            Some(other) => {
                return Err(format!(
                    "on_exhausted must be stop, recycle or error, got {other:?}"
                ))
            }
        };
        if d.unique && on_exhausted == OnExhausted::Recycle {
            return Err("unique=True uses each row once: on_exhausted is stop or error".into());
        }
        if !d.unique && order == Order::Random && on_exhausted != OnExhausted::Recycle {
            return Err(
                "order='random' without unique draws rows with replacement and never runs \
                 out: give unique=True to use each row once"
                    .into(),
            );
        }
        let (index, count) = match d.slice {
            Some([_, 0]) => return Err("slice count must be >= 1".into()),
            Some([i, n]) if i >= n => return Err(format!("slice {i} of {n} is out of range")),
            Some([i, n]) => (i as usize, n as usize),
            None => (0, 1),
        };
        let rows = match &d.csv {
            Some(text) => parse_csv(text, d.columns.len(), index, count)?,
            None => from_rows(&d.rows, d.columns.len(), index, count)?,
        };
        if rows.is_empty() {
            return Err(if count > 1 {
                format!("has fewer rows than the {count} injectors (each row goes to one injector): add rows or use fewer injectors")
            } else {
                "has no rows".into()
            });
        }
        let perm = if order == Order::Random && d.unique {
            shuffled(rows.len())
        } else {
            Vec::new()
        };
        Ok(Data {
            name: d.name.clone(),
            per_vu,
            slots,
            rows,
            order,
            unique: d.unique,
            on_exhausted,
            perm,
            state: Arc::default(),
        })
    }

    /// take hands out the next row for an iteration (or a VU), drawing from `rng` for a
    /// random order; None when the set has run out (never with `recycle`).
    pub fn take(&self, rng: &mut Rng) -> Option<usize> {
        let n = self.rows.len() as u64;
        if self.order == Order::Random && !self.unique {
            self.state.draws.fetch_add(1, Ordering::Relaxed);
            return Some(rng.below(n) as usize);
        }
        let k = self.state.cursor.fetch_add(1, Ordering::Relaxed);
        let k = if k < n {
            k
        } else if self.on_exhausted == OnExhausted::Recycle {
            k % n
        } else {
            self.state.used_up.store(true, Ordering::Relaxed);
            return None;
        };
        Some(match self.perm.get(k as usize) {
            Some(&p) => p as usize,
            None => k as usize,
        })
    }

    /// miss counts an iteration failed for want of a row.
    pub fn miss(&self) {
        self.state.missed.fetch_add(1, Ordering::Relaxed);
    }

    /// stopped says whether this set has run out and stops the VUs that find no row.
    pub fn stopped(&self) -> bool {
        self.on_exhausted == OnExhausted::Stop && self.state.used_up.load(Ordering::Relaxed)
    }

    /// report is the set's figures so far.
    pub fn report(&self) -> DataReport {
        let n = self.rows.len() as u64;
        let cursor = self.state.cursor.load(Ordering::Relaxed);
        let taken = match (self.order, self.unique, self.on_exhausted) {
            (Order::Random, false, _) => self.state.draws.load(Ordering::Relaxed),
            (_, _, OnExhausted::Recycle) => cursor,
            _ => cursor.min(n),
        };
        DataReport {
            rows: n,
            taken,
            used_up: self.state.used_up.load(Ordering::Relaxed),
            missed: self.state.missed.load(Ordering::Relaxed),
            unique: self.unique,
            order: match self.order {
                Order::Sequential => "sequential",
                Order::Random => "random",
            },
            on_exhausted: self.on_exhausted.name(),
        }
    }
}

/// fill sets the columns of `data`'s sets in `vars` for an iteration: the next row of each
/// per-iteration set, and on a VU's `first` iteration its row of each per-VU set. Err names
/// the set that ran out.
pub fn fill(data: &[Data], vars: &mut [String], rng: &mut Rng, first: bool) -> Result<(), usize> {
    for (i, d) in data.iter().enumerate() {
        if d.per_vu && !first {
            continue;
        }
        let row = d.take(rng).ok_or(i)?;
        for (slot, v) in d.slots.iter().zip(d.rows.row(row)) {
            vars[*slot].clear();
            vars[*slot].push_str(v);
        }
    }
    Ok(())
}

/// parse_csv reads a CSV file's text (header first) into rows `width` wide, keeping the rows
/// numbered `index`, `index + count`, ...
fn parse_csv(text: &str, width: usize, index: usize, count: usize) -> Result<Rows, String> {
    let mut rd = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut rows = Rows {
        width,
        ..Rows::default()
    };
    let mut rec = csv::StringRecord::new();
    let mut i = 0usize;
    loop {
        match rd.read_record(&mut rec) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(format!("bad CSV: {e}")),
        }
        if rec.len() != width {
            let line = rec.position().map_or(0, csv::Position::line);
            return Err(format!(
                "line {line} has {} fields, the header {width}",
                rec.len()
            ));
        }
        if i % count == index && !rows.push(rec.iter()) {
            return Err("the file is over 4 GiB".into());
        }
        i += 1;
    }
    Ok(rows)
}

/// from_rows packs rows given one by one (a JSON data file, read by Python).
fn from_rows(
    given: &[Vec<String>],
    width: usize,
    index: usize,
    count: usize,
) -> Result<Rows, String> {
    let mut rows = Rows {
        width,
        ..Rows::default()
    };
    for r in given.iter().skip(index).step_by(count) {
        if r.len() != width {
            return Err("rows must be as wide as the columns".into());
        }
        if !rows.push(r.iter().map(String::as_str)) {
            return Err("the rows are over 4 GiB".into());
        }
    }
    Ok(rows)
}

/// shuffled is a random permutation of `0..n` (Fisher-Yates, fixed seed: a run's order is
/// reproducible).
fn shuffled(n: usize) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n as u32).collect();
    let mut rng = Rng::new(0xda7a);
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        p.swap(i, j);
    }
    p
}

#[cfg(test)]
#[path = "data_tests.rs"]
mod tests;
