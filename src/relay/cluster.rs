//! The relay over a live cluster, on the official `fluvio` client: a consumer stream per
//! partition, consumer offsets stored under the relay's consumer id, a producer with keys.
//!
//! One quirk shapes [`FluvioPartition::commit`]: a consumer stream commits the offset of the last
//! record it yielded, and its retrying wrapper keeps a lock while a fetch is pending, so a
//! commit on the stream that is read ahead would either deadlock or store an offset not yet
//! relayed. The data therefore comes from a stream without a consumer id, and each commit opens
//! a one-record stream under the consumer id at the last relayed offset, commits that record
//! and flushes (the SPU acknowledges), then drops it.

use std::rc::Rc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use fluvio::consumer::{
    BoxConsumerStream, ConsumerConfigExt, ConsumerStream, OffsetManagementStrategy, RetryMode,
};
use fluvio::metadata::smartmodule::SmartModuleSpec;
use fluvio::{
    Fluvio, Offset, ProduceOutput, RecordKey, TopicProducerConfigBuilder, TopicProducerPool,
};
use futures_util::{FutureExt, StreamExt};

use super::pump::{AtOffset, Connect, Partition, Position, Sink};
use crate::record::Rec;
pub(crate) use crate::topics::{Layout, connect, ensure_topic, layout};
use crate::topics::{MAX_BYTES, timed};

/// Bytes of the one-record fetch a commit makes, at first.
const COMMIT_BYTES: i32 = 1 << 20;
/// The `.wasm` of the SmartModule registered as `name`, so the relay runs the very bytes the
/// chat consumers run.
pub(crate) async fn smartmodule_wasm(fluvio: &Fluvio, name: &str) -> Result<Vec<u8>> {
    let admin = fluvio.admin().await;
    let found = admin
        .list::<SmartModuleSpec, String>(vec![name.to_owned()])
        .await?;
    let sm = found.into_iter().find(|s| s.name == name).ok_or_else(|| {
        anyhow!(
            "no SmartModule {name:?} in the cluster (`fluvio smartmodule list`; register it \
             with `fluvio smartmodule create {name} --wasm-file …`, or give --wasm FILE)"
        )
    })?;
    sm.spec
        .wasm
        .as_raw_wasm()
        .with_context(|| format!("unpacking SmartModule {name:?}"))
}

/// What a relay's partition connects to.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub topic: String,
    pub to: String,
    pub consumer: String,
    pub partition: u32,
}

/// Opens a [`FluvioPartition`] and a [`FluvioSink`] on a fresh connection each time (after a failure
/// the old one may be dead), the first time on the connection the relay started with.
pub(crate) struct FluvioConnect {
    pub target: Target,
    pub first: Option<Fluvio>,
}

impl Connect for FluvioConnect {
    type Partition = FluvioPartition;
    type Sink = FluvioSink;

    async fn open(&mut self) -> Result<(FluvioPartition, FluvioSink)> {
        let fluvio = Rc::new(match self.first.take() {
            Some(f) => f,
            None => connect().await?,
        });
        let config = TopicProducerConfigBuilder::default()
            .batch_size(512 << 10)
            .linger(Duration::from_millis(20))
            .build()?;
        let producer = timed(
            "opening the producer",
            fluvio.topic_producer_with_config(self.target.to.clone(), config),
        )
        .await?;
        let log = FluvioPartition {
            fluvio: fluvio.clone(),
            target: self.target.clone(),
            stream: None,
            history: None,
        };
        let sink = FluvioSink {
            _fluvio: fluvio,
            producer,
            waiting: Vec::new(),
        };
        Ok((log, sink))
    }
}

/// One partition of the event topic through the fluvio client.
pub(crate) struct FluvioPartition {
    fluvio: Rc<Fluvio>,
    target: Target,
    stream: Option<BoxConsumerStream>,
    /// The look-back's stream, kept between reads, and the offset it hands over next.
    history: Option<(i64, BoxConsumerStream)>,
}

impl FluvioPartition {
    /// A stream of the partition from `from`; under the consumer id when `consumer`.
    async fn open(&self, from: i64, consumer: bool, max_bytes: i32) -> Result<BoxConsumerStream> {
        let t = &self.target;
        let mut b = ConsumerConfigExt::builder();
        b.topic(t.topic.clone())
            .partition(t.partition)
            .offset_start(Offset::absolute(from)?)
            .max_bytes(max_bytes)
            // A failure comes to the relay, which resumes from its committed offset.
            .retry_mode(RetryMode::Disabled);
        if consumer {
            b.offset_consumer(t.consumer.clone())
                .offset_strategy(OffsetManagementStrategy::Manual);
        }
        let stream = timed(
            "opening a consumer stream",
            self.fluvio.consumer_with_config(b.build()?),
        )
        .await?;
        Ok(Box::pin(stream))
    }

    async fn partition_status(&self) -> Result<(i64, i64)> {
        crate::topics::partition_span(&self.fluvio, &self.target.topic, self.target.partition).await
    }
}

/// The next record of `stream`, waiting up to `wait` (None: none came).
async fn next(stream: &mut BoxConsumerStream, wait: Duration) -> Result<Option<AtOffset>> {
    match tokio::time::timeout(wait, stream.next()).await {
        Err(_) => Ok(None),
        Ok(None) => bail!("the consumer stream ended"),
        Ok(Some(Err(code))) => bail!("fetching: {code}"),
        Ok(Some(Ok(r))) => Ok(Some((r.offset, Rec::new(r.key(), r.value())))),
    }
}

impl Partition for FluvioPartition {
    async fn position(&mut self) -> Result<Position> {
        let (first, end) = timed("reading the partition's status", self.partition_status()).await?;
        let t = &self.target;
        let offsets = timed("reading consumer offsets", self.fluvio.consumer_offsets()).await?;
        // The cluster stores the last record relayed; the relay resumes one past it.
        let committed = offsets
            .iter()
            .find(|o| {
                o.consumer_id == t.consumer && o.topic == t.topic && o.partition == t.partition
            })
            .map(|o| o.offset + 1);
        Ok(Position {
            first,
            end,
            committed,
        })
    }

    async fn end(&mut self) -> Result<i64> {
        Ok(
            timed("reading the partition's status", self.partition_status())
                .await?
                .1,
        )
    }

    async fn read(&mut self, from: i64, to: i64) -> Result<Vec<AtOffset>> {
        let mut stream = match self.history.take() {
            Some((at, stream)) if at == from => stream,
            _ => self.open(from, false, MAX_BYTES).await?,
        };
        let (mut out, mut bytes) = (Vec::new(), 0);
        let mut expected = from;
        // Up to `to`, a fetch's bytes (the stream is kept for the next read), a gap (the
        // caller reads again from it) or a pause in what the cluster sends.
        while expected < to && bytes < MAX_BYTES as usize {
            match next(&mut stream, Duration::from_secs(5)).await? {
                Some((offset, rec)) if offset == expected => {
                    bytes += rec.bytes();
                    out.push((offset, rec));
                    expected += 1;
                }
                Some((offset, _)) if offset < expected => {}
                _ => return Ok(out),
            }
        }
        if expected < to {
            self.history = Some((expected, stream));
        }
        Ok(out)
    }

    async fn seek(&mut self, from: i64) -> Result<()> {
        (self.stream, self.history) = (None, None);
        self.stream = Some(self.open(from, false, MAX_BYTES).await?);
        Ok(())
    }

    async fn poll(&mut self, max: usize, wait: Duration) -> Result<Vec<AtOffset>> {
        let stream = self
            .stream
            .as_mut()
            .ok_or_else(|| anyhow!("poll before seek"))?;
        let mut out = Vec::new();
        let Some(first) = next(stream, wait).await? else {
            return Ok(out);
        };
        out.push(first);
        // Whatever the response in hand holds, without waiting for the next fetch.
        while out.len() < max {
            match stream.next().now_or_never() {
                Some(Some(Ok(r))) => out.push((r.offset, Rec::new(r.key(), r.value()))),
                Some(Some(Err(code))) => bail!("fetching: {code}"),
                Some(None) => bail!("the consumer stream ended"),
                None => break,
            }
        }
        Ok(out)
    }

    async fn commit(&mut self, next_offset: i64) -> Result<()> {
        let last = next_offset - 1;
        if last < 0 {
            return Ok(());
        }
        // A fetch returns whole batches that fit in its bytes (a cut batch is lost): a small
        // fetch first, a large one when the batch holding `last` is bigger.
        let mut found = None;
        for max_bytes in [COMMIT_BYTES, MAX_BYTES] {
            let mut stream = self.open(last, true, max_bytes).await?;
            found = next(&mut stream, Duration::from_secs(5))
                .await?
                .map(|(o, _)| o);
            if found == Some(last) {
                return timed("committing", async {
                    stream
                        .offset_commit()
                        .await
                        .map_err(|e| anyhow!("committing offset {last}: {e}"))?;
                    stream
                        .offset_flush()
                        .await
                        .map_err(|e| anyhow!("flushing the commit of offset {last}: {e}"))
                })
                .await
                .with_context(|| {
                    format!(
                        "committing offset {last} for consumer {}",
                        self.target.consumer
                    )
                });
            }
        }
        bail!("committing offset {last}: a stream from it began at {found:?}")
    }
}

/// The sibling topic through the fluvio client's producer.
pub(crate) struct FluvioSink {
    _fluvio: Rc<Fluvio>,
    producer: TopicProducerPool,
    waiting: Vec<ProduceOutput>,
}

impl Sink for FluvioSink {
    async fn send(&mut self, record: Rec) -> Result<()> {
        let key = record.key.map_or(RecordKey::NULL, RecordKey::from);
        let out = timed("producing", self.producer.send(key, record.value)).await?;
        self.waiting.push(out);
        Ok(())
    }

    async fn flush(&mut self) -> Result<()> {
        timed("flushing the producer", self.producer.flush()).await?;
        // Each record's metadata comes back once the SPU stored its batch: the acknowledgement.
        for out in self.waiting.drain(..) {
            timed("waiting for the acknowledgement", out.wait()).await?;
        }
        Ok(())
    }
}
