//! In-memory stand-ins for a cluster: a topic's partitions, a consumer's committed offsets and
//! a sibling topic, with the faults a real cluster shows (gaps in a fetch, lost connections,
//! failed produces, a crash between produce and commit), and a journal of what happened in
//! which order. The relay's tests run the very loop the CLI runs over them.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;
use std::time::Duration;

use anyhow::{Result, bail};

use super::pump::{AtOffset, Connect, Partition, Position, Sink};
use crate::record::Rec;

/// What the relay did, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterEvent {
    /// A history read for look-back: `[from, to)` asked.
    Read { partition: u32, from: i64, to: i64 },
    /// The live stream (re)started at an offset.
    Seek { partition: u32, from: i64 },
    /// A record queued for the sibling topic.
    Sent,
    /// The cluster acknowledged every record sent so far (the sibling topic's length then).
    Acked(usize),
    /// A consumer offset stored.
    Committed { partition: u32, next: i64 },
}

/// Faults to inject.
#[derive(Debug, Default)]
pub struct Faults {
    /// (partition, offset): the next live poll that reaches it skips it once, as this Fluvio
    /// version's SPU skipped records at ~1 MB response boundaries.
    pub skip_once: BTreeSet<(u32, i64)>,
    /// (partition, offset): every live poll skips it: a record that never comes.
    pub skip_always: BTreeSet<(u32, i64)>,
    /// Opens that fail before one succeeds (an unreachable cluster).
    pub refuse_opens: u32,
    /// Flushes that fail, counting from the next; the records sent land all the same (the
    /// acknowledgement was lost), so a retry repeats them.
    pub fail_flushes: BTreeSet<usize>,
    /// After this many more records sent, `send` never returns: the process is killed there,
    /// and what it had sent lands unacknowledged (the worst case: it comes again).
    pub hang_after_sends: Option<usize>,
    /// After this many more commits, `commit` never returns: killed after an acknowledgement,
    /// before its commit.
    pub hang_after_commits: Option<usize>,
    /// Records one poll hands over at most (a fetch's size).
    pub fetch: Option<usize>,
}

/// The cluster's state: the event topic's partitions, committed offsets, the sibling topic.
#[derive(Debug, Default)]
pub struct ClusterState {
    pub partitions: Vec<Vec<Rec>>,
    /// The offset of each partition's first record (`partitions[p][0]`).
    pub base: Vec<i64>,
    /// The first offset still stored, per partition.
    pub first: Vec<i64>,
    pub committed: Vec<Option<i64>>,
    /// The sibling topic: acknowledged records, in order.
    pub out: Vec<Rec>,
    /// Sent and not yet flushed.
    pub pending: Vec<Rec>,
    pub journal: Vec<ClusterEvent>,
    pub faults: Faults,
    pub opens: u32,
    pub flushes: usize,
    /// Set when a send hung (the test then drops the relay: a kill).
    pub hung: bool,
}

/// A cluster in memory, shared by the relay's stand-ins and the test that looks at it.
#[derive(Debug, Clone, Default)]
pub struct Cluster(pub Rc<RefCell<ClusterState>>);

impl ClusterState {
    /// The offset after partition `p`'s last record.
    pub fn end(&self, p: usize) -> i64 {
        self.base[p] + self.partitions[p].len() as i64
    }

    /// Partition `p`'s record at `offset`.
    fn at(&self, p: usize, offset: i64) -> &Rec {
        &self.partitions[p][(offset - self.base[p]) as usize]
    }
}

impl Cluster {
    /// A topic of `partitions`, each with its records.
    pub fn new(partitions: Vec<Vec<Rec>>) -> Cluster {
        Cluster::from_offset(partitions, 0)
    }

    /// A topic whose partitions' first records are at offset `base` (one that has run for a
    /// long time, its older records gone).
    pub fn from_offset(partitions: Vec<Vec<Rec>>, base: i64) -> Cluster {
        let n = partitions.len();
        Cluster(Rc::new(RefCell::new(ClusterState {
            partitions,
            base: vec![base; n],
            first: vec![base; n],
            committed: vec![None; n],
            ..ClusterState::default()
        })))
    }

    pub fn state(&self) -> std::cell::RefMut<'_, ClusterState> {
        self.0.borrow_mut()
    }

    /// Appends records to a partition (a live producer).
    pub fn append(&self, partition: u32, records: impl IntoIterator<Item = Rec>) {
        self.state().partitions[partition as usize].extend(records);
    }

    /// Runs `relay` until it ends (`Some`) or a send or commit hangs on an injected fault
    /// (`None`: the relay is dropped there, as a kill would stop it); then the hang and the
    /// hang faults are cleared for the next relay.
    pub async fn unless_killed<T>(&self, relay: impl Future<Output = T>) -> Option<T> {
        let hung = async {
            while !self.state().hung {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        };
        let ended = tokio::select! {
            r = relay => Some(r),
            _ = hung => None,
        };
        let mut st = self.state();
        st.hung = false;
        (st.faults.hang_after_sends, st.faults.hang_after_commits) = (None, None);
        ended
    }

    /// A connector for one partition.
    pub fn connect(&self, partition: u32) -> Connector {
        Connector {
            cluster: self.clone(),
            partition,
        }
    }
}

/// Opens [`MemPartition`] and [`MemSink`] for one partition.
pub struct Connector {
    cluster: Cluster,
    partition: u32,
}

impl Connect for Connector {
    type Partition = MemPartition;
    type Sink = MemSink;

    async fn open(&mut self) -> Result<(MemPartition, MemSink)> {
        let mut st = self.cluster.state();
        st.opens += 1;
        if st.faults.refuse_opens > 0 {
            st.faults.refuse_opens -= 1;
            bail!("connection refused (127.0.0.1:9003)");
        }
        st.pending.clear();
        let log = MemPartition {
            cluster: self.cluster.clone(),
            partition: self.partition,
            cursor: None,
        };
        Ok((
            log,
            MemSink {
                cluster: self.cluster.clone(),
            },
        ))
    }
}

/// One partition's consumer.
pub struct MemPartition {
    cluster: Cluster,
    partition: u32,
    cursor: Option<i64>,
}

impl Partition for MemPartition {
    async fn position(&mut self) -> Result<Position> {
        let st = self.cluster.state();
        let p = self.partition as usize;
        Ok(Position {
            first: st.first[p],
            end: st.end(p),
            committed: st.committed[p],
        })
    }

    async fn end(&mut self) -> Result<i64> {
        Ok(self.cluster.state().end(self.partition as usize))
    }

    async fn read(&mut self, from: i64, to: i64) -> Result<Vec<AtOffset>> {
        let mut st = self.cluster.state();
        let (partition, p) = (self.partition, self.partition as usize);
        st.journal.push(ClusterEvent::Read {
            partition,
            from,
            to,
        });
        let end = to.min(st.end(p));
        let take = st.faults.fetch.map_or(i64::MAX, |f| f as i64);
        Ok((from.max(st.first[p])..end.min(from.saturating_add(take)))
            .map(|o| (o, st.at(p, o).clone()))
            .collect())
    }

    async fn seek(&mut self, from: i64) -> Result<()> {
        let partition = self.partition;
        self.cluster
            .state()
            .journal
            .push(ClusterEvent::Seek { partition, from });
        self.cursor = Some(from);
        Ok(())
    }

    async fn poll(&mut self, max: usize, wait: Duration) -> Result<Vec<AtOffset>> {
        let Some(cursor) = self.cursor else {
            bail!("poll before seek");
        };
        let got = {
            let mut st = self.cluster.state();
            let p = self.partition as usize;
            let max = max.min(st.faults.fetch.unwrap_or(usize::MAX));
            let mut got = Vec::new();
            let mut o = cursor.max(st.base[p]);
            while o < st.end(p) && got.len() < max {
                let key = (self.partition, o);
                if !st.faults.skip_always.contains(&key) && !st.faults.skip_once.remove(&key) {
                    got.push((o, st.at(p, o).clone()));
                }
                o += 1;
            }
            self.cursor = Some(o);
            got
        };
        match got.is_empty() {
            true => tokio::time::sleep(wait).await,
            // A fetch is a network round trip: other futures of the task run meanwhile.
            false => tokio::task::yield_now().await,
        }
        Ok(got)
    }

    async fn commit(&mut self, next: i64) -> Result<()> {
        if hang(&mut self.cluster.state().faults.hang_after_commits) {
            self.cluster.state().hung = true;
            std::future::pending::<()>().await;
        }
        let mut st = self.cluster.state();
        let partition = self.partition;
        st.committed[partition as usize] = Some(next);
        st.journal.push(ClusterEvent::Committed { partition, next });
        Ok(())
    }
}

/// Counts a fault down: true when it is due.
fn hang(countdown: &mut Option<usize>) -> bool {
    match countdown {
        Some(0) => true,
        Some(n) => {
            *n -= 1;
            false
        }
        None => false,
    }
}

/// The sibling topic's producer.
pub struct MemSink {
    cluster: Cluster,
}

impl Sink for MemSink {
    async fn send(&mut self, record: Rec) -> Result<()> {
        let hang = hang(&mut self.cluster.state().faults.hang_after_sends);
        if hang {
            {
                let mut st = self.cluster.state();
                st.hung = true;
                let sent = std::mem::take(&mut st.pending);
                st.out.extend(sent);
            }
            std::future::pending::<()>().await;
        }
        let mut st = self.cluster.state();
        st.pending.push(record);
        st.journal.push(ClusterEvent::Sent);
        Ok(())
    }

    async fn flush(&mut self) -> Result<()> {
        let mut st = self.cluster.state();
        let n = st.flushes;
        st.flushes += 1;
        let sent = std::mem::take(&mut st.pending);
        st.out.extend(sent);
        if st.faults.fail_flushes.remove(&n) {
            bail!("produce timed out waiting for the acknowledgement");
        }
        let len = st.out.len();
        st.journal.push(ClusterEvent::Acked(len));
        Ok(())
    }
}

/// Whether `out` holds every record of `expected` in order per session (record key), a record
/// equal to one already seen of its session being a duplicate: the duplicates, or what is
/// wrong (a record lost, or one that `expected` does not have).
pub fn duplicates(expected: &[Rec], out: &[Rec]) -> Result<usize, String> {
    let mut want: HashMap<&Option<Vec<u8>>, Vec<&Rec>> = HashMap::new();
    for r in expected {
        want.entry(&r.key).or_default().push(r);
    }
    let mut at: HashMap<&Option<Vec<u8>>, usize> = HashMap::new();
    let mut dups = 0;
    for r in out {
        let w = want.get(&r.key).map(Vec::as_slice).unwrap_or_default();
        let i = at.entry(&r.key).or_default();
        if *i < w.len() && w[*i] == r {
            *i += 1;
        } else if w[..*i].contains(&r) {
            dups += 1;
        } else {
            return Err(format!(
                "unexpected record {}",
                String::from_utf8_lossy(&r.value)
            ));
        }
    }
    for (k, w) in &want {
        let got = at.get(k).copied().unwrap_or(0);
        if got < w.len() {
            return Err(format!(
                "session {:?}: {} of {} records lost",
                k.as_deref().map(String::from_utf8_lossy),
                w.len() - got,
                w.len()
            ));
        }
    }
    Ok(dups)
}

/// Whether every commit in `journal` came after the acknowledgement of every record sent
/// before it.
pub fn commits_follow_acks(journal: &[ClusterEvent]) -> Result<(), String> {
    let mut unacked = 0;
    for (i, e) in journal.iter().enumerate() {
        match e {
            ClusterEvent::Sent => unacked += 1,
            ClusterEvent::Acked(_) => unacked = 0,
            ClusterEvent::Committed { next, .. } if unacked > 0 => {
                return Err(format!(
                    "event {i}: offset {next} committed with {unacked} records unacknowledged"
                ));
            }
            _ => {}
        }
    }
    Ok(())
}
