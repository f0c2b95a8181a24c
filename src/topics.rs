//! Fluvio topics as the host tools meet them: the current profile's cluster, a topic's name and
//! layout, one made when missing (told apart from one that exists by its error code).

use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use fluvio::dataplane::link::ErrorCode;
use fluvio::metadata::partition::PartitionSpec;
use fluvio::metadata::topic::{TopicResolution, TopicSpec};
use fluvio::{Fluvio, FluvioAdmin, FluvioClusterConfig};
use fluvio_sc_schema::ApiError;

/// Bytes one fetch may bring: large, so that few responses have a boundary to lose records at
/// (this Fluvio loses records at ~1 MB response boundaries: readers check offsets are
/// contiguous).
pub(crate) const MAX_BYTES: i32 = 32 << 20;

/// A request that takes longer than this is a failed cluster.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Awaits `f`, failing after `TIMEOUT` with `what` named.
pub(crate) async fn timed<T, E: Into<anyhow::Error>>(
    what: &str,
    f: impl Future<Output = Result<T, E>>,
) -> Result<T> {
    match tokio::time::timeout(TIMEOUT, f).await {
        Ok(r) => r.map_err(Into::into),
        Err(_) => Err(anyhow!("{what}: no answer in {TIMEOUT:?}")),
    }
}

/// Connects with the current profile, as the `fluvio` CLI does.
pub(crate) async fn connect() -> Result<Fluvio> {
    let config = FluvioClusterConfig::load().context("reading the current fluvio profile")?;
    timed("connecting", Fluvio::connect_with_config(&config))
        .await
        .with_context(|| {
            format!(
                "cannot reach the Fluvio cluster at {} (the current profile)",
                config.endpoint
            )
        })
}

/// How a topic is laid out: its partitions and its replication factor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    pub partitions: u32,
    pub replication: u32,
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "{} partition(s), replication {}",
            self.partitions, self.replication
        )
    }
}

/// How `topic` is laid out (a replica map that names no factor counts as 1).
pub(crate) async fn layout(fluvio: &Fluvio, topic: &str) -> Result<Layout> {
    match listed(&fluvio.admin().await, topic).await? {
        Some((layout, _)) => Ok(layout),
        None => bail!("topic {topic:?} does not exist (`fluvio topic list`)"),
    }
}

/// How `topic` is laid out, or `None` when the cluster has no such topic.
pub(crate) async fn find(fluvio: &Fluvio, topic: &str) -> Result<Option<Layout>> {
    Ok(listed(&fluvio.admin().await, topic)
        .await
        .context("listing topics")?
        .map(|(layout, _)| layout))
}

/// Partition `partition` of `topic`: its first offset kept and its high watermark (the offset
/// the next record written gets; records below it are committed).
pub(crate) async fn partition_span(
    fluvio: &Fluvio,
    topic: &str,
    partition: u32,
) -> Result<(i64, i64)> {
    let name = format!("{topic}-{partition}");
    let admin = fluvio.admin().await;
    let found = timed(
        "listing partitions",
        admin.list::<PartitionSpec, String>(vec![name.clone()]),
    )
    .await?;
    let p = found
        .into_iter()
        .find(|p| p.name == name)
        .ok_or_else(|| anyhow!("partition {name} not found"))?;
    Ok((p.status.base_offset.max(0), p.status.leader.hw.max(0)))
}

/// `topic`'s layout and resolution, if the cluster has it.
async fn listed(admin: &FluvioAdmin, topic: &str) -> Result<Option<(Layout, TopicResolution)>> {
    let topics = admin
        .list::<TopicSpec, String>(vec![topic.to_owned()])
        .await?;
    Ok(topics.into_iter().find(|t| t.name == topic).map(|t| {
        let layout = Layout {
            partitions: t.spec.partitions(),
            replication: t.spec.replication_factor().unwrap_or(1),
        };
        (layout, t.status.resolution)
    }))
}

/// The cluster's answer that the topic is there already, by its error code (not its text).
pub(crate) fn already_exists(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<ApiError>(),
            Some(ApiError::Code(ErrorCode::TopicAlreadyExists, _))
        )
    })
}

/// Creates `to` laid out as `want` when missing (saying so), and waits until it is
/// provisioned. A `to` that exists laid out otherwise is said, and relayed into as it is.
pub(crate) async fn ensure_topic(fluvio: &Fluvio, to: &str, want: Layout) -> Result<()> {
    let admin = fluvio.admin().await;
    match listed(&admin, to).await? {
        Some((have, _)) if have != want => tracing::warn!(
            "topic {to} exists with {have}, not {want} as asked: relaying into it as it is"
        ),
        Some(_) => {}
        None => {
            let spec = TopicSpec::new_computed(want.partitions, want.replication, None);
            match admin.create(to.to_owned(), false, spec).await {
                Ok(()) => tracing::info!("created topic {to} ({want})"),
                // Another relay sharing the topic's partitions may have created it meanwhile.
                Err(e) if already_exists(&e) => {}
                Err(e) => return Err(e.context(format!("creating topic {to} ({want})"))),
            }
        }
    }
    for _ in 0..100 {
        if let Some((_, TopicResolution::Provisioned)) = listed(&admin, to).await? {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("topic {to} was not provisioned in 10 s")
}

/// A Fluvio topic name: lowercase letters, digits and `-`, 63 at most.
pub(crate) fn topic_name(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    match ok {
        true => Ok(s.to_owned()),
        false => Err(format!(
            "{s:?} is no Fluvio topic name (lowercase letters, digits and -, 63 at most)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_existing_topic_is_told_by_its_error_code_not_its_text() {
        let exists = anyhow::Error::new(ApiError::Code(ErrorCode::TopicAlreadyExists, None))
            .context("creating topic t-pressure");
        assert!(already_exists(&exists));
        // Text that says "exists" under another code is a failure to report.
        let other = anyhow::Error::new(ApiError::Code(
            ErrorCode::TopicInvalidName,
            Some("a topic name that exists only in lowercase".to_owned()),
        ));
        assert!(!already_exists(&other));
        assert!(!already_exists(&anyhow!("the topic exists")));
    }
}
