//! When the service's records become durable, and the group commit that makes them so.
//!
//! - [`Commit::Group`] (the default): a request is answered only once its records are on
//!   disk, and concurrent requests share one commit: the committer commits every live run's
//!   waiting records in one `Store::append_group` (one transaction, one sync to disk), again
//!   and again while records wait, and each waiting request is woken when a round that holds
//!   its records is durable. Records admitted while a round syncs go into the next round.
//! - [`Commit::Sync`]: each request commits its own records before it is answered.
//! - [`Commit::Async`]: answered at once, committed within a window (opt-in): a crash loses
//!   the acknowledged steps of the last window — under load, thousands.
//!
//! A waiting request holds a [`Ticket`]: the first round that started after its records were
//! waiting. The ticket is taken under the run's lock, and a round copies a run's records under
//! the same lock after it has started, so the round the ticket names — or one after it —
//! holds them. A round in which the run's commit failed (the records stay waiting) does not
//! count: the committer retries, and the request is answered once a round commits them, or
//! with an error when none does in time (the call is then not admitted).

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use cairn_core::{RunId, TenantId};

use crate::error::{ApiError, ServerCode};

/// When records become durable (`cairn serve --durability`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commit {
    /// Durable before the answer; concurrent requests share one commit.
    Group,
    /// Each request commits its own records before it is answered.
    Sync,
    /// Answered before the commit, which comes within `window`: a crash loses what waits.
    Async {
        /// The longest a record waits for its commit.
        window: Duration,
    },
}

impl Commit {
    /// The window of `async` when none is named.
    pub const DEFAULT_ASYNC_WINDOW: Duration = Duration::from_millis(20);

    /// The name `--durability` takes.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Group => "group",
            Self::Sync => "sync",
            Self::Async { .. } => "async",
        }
    }
}

impl std::str::FromStr for Commit {
    type Err = String;

    /// `group`, `sync` or `async`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "group" => Ok(Self::Group),
            "sync" => Ok(Self::Sync),
            "async" => Ok(Self::Async {
                window: Self::DEFAULT_ASYNC_WINDOW,
            }),
            "batch" => Err(
                "`batch` answered before its records were durable and is gone: the default `group` is durable and shares commits between requests; `async` answers before the commit (a crash loses the steps of its last 20 ms)"
                    .to_owned(),
            ),
            other => Err(format!(
                "`{other}` is not a durability: `group` (the default), `sync` or `async`"
            )),
        }
    }
}

/// A run as the service keys it.
pub(crate) type RunKey = (TenantId, RunId);

/// What a request waits for: a round at or after `round` that commits `run`'s records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    round: u64,
    run: RunKey,
}

/// A finished round: its number, and the runs whose records it failed to commit.
#[derive(Debug, Clone, Default)]
struct Round {
    number: u64,
    failed: Arc<HashSet<RunKey>>,
}

/// The group commit's rounds and the requests waiting on them. The committer is a thread of
/// its own (it blocks on the disk), woken through a condition variable by the requests that
/// wait; the requests are tasks, woken through a watch channel when a round ends.
#[derive(Debug)]
pub(crate) struct GroupCommit {
    started: AtomicU64,
    /// Whether a request asked for a round since the committer last looked, or the service
    /// stops (`Some(true)` asked, `None` stop).
    asked: std::sync::Mutex<Option<bool>>,
    wake: std::sync::Condvar,
    done: tokio::sync::watch::Sender<Round>,
}

impl Default for GroupCommit {
    fn default() -> Self {
        Self {
            started: AtomicU64::new(0),
            asked: std::sync::Mutex::new(Some(false)),
            wake: std::sync::Condvar::new(),
            done: tokio::sync::watch::Sender::new(Round::default()),
        }
    }
}

/// How long a request waits for its records to be committed before it is answered with an
/// error (the call is then not admitted).
pub(crate) const COMMIT_WAIT: Duration = Duration::from_secs(10);

impl GroupCommit {
    /// The ticket of records of `run` that are waiting now. Taken under the run's lock.
    pub(crate) fn ticket(&self, run: RunKey) -> Ticket {
        Ticket {
            round: self.started.load(Ordering::SeqCst).saturating_add(1),
            run,
        }
    }

    /// Waits until a round holding `ticket`'s records is durable.
    ///
    /// # Errors
    /// `record_not_committed` when no round commits them within [`COMMIT_WAIT`].
    pub(crate) async fn durable(&self, ticket: &Ticket) -> Result<(), ApiError> {
        let mut rounds = self.done.subscribe();
        self.ask();
        let committed = rounds
            .wait_for(|round| round.number >= ticket.round && !round.failed.contains(&ticket.run));
        match tokio::time::timeout(COMMIT_WAIT, committed).await {
            Ok(Ok(_)) => Ok(()),
            _ => Err(ApiError::new(
                ServerCode::NOT_COMMITTED,
                format!(
                    "the record was not committed within {} s: the call is not admitted",
                    COMMIT_WAIT.as_secs()
                ),
            )),
        }
    }

    fn flag(&self) -> std::sync::MutexGuard<'_, Option<bool>> {
        self.asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Blocks until a request asks for a round (at once if one asked meanwhile): `false` once
    /// the service stops. Wakes every `patience` to look again regardless.
    pub(crate) fn asked(&self, patience: Duration) -> bool {
        let mut asked = self.flag();
        loop {
            match *asked {
                None => return false,
                Some(true) => {
                    *asked = Some(false);
                    return true;
                }
                Some(false) => {
                    asked = self
                        .wake
                        .wait_timeout(asked, patience)
                        .map_or_else(|e| e.into_inner().0, |(guard, _)| guard);
                }
            }
        }
    }

    /// Asks for a round.
    pub(crate) fn ask(&self) {
        let mut asked = self.flag();
        if *asked == Some(false) {
            *asked = Some(true);
            self.wake.notify_one();
        }
    }

    /// Tells the committer to stop.
    pub(crate) fn stop(&self) {
        *self.flag() = None;
        self.wake.notify_all();
    }

    /// Starts a round; returns its number. The round must copy the runs' records after this.
    pub(crate) fn begin(&self) -> u64 {
        self.started
            .fetch_add(1, Ordering::SeqCst)
            .saturating_add(1)
    }

    /// Ends round `number`, in which the runs `failed` were not committed.
    pub(crate) fn finish(&self, number: u64, failed: HashSet<RunKey>) {
        self.done.send_replace(Round {
            number,
            failed: Arc::new(failed),
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    fn key(run: &str) -> RunKey {
        ("t".parse().unwrap(), run.parse().unwrap())
    }

    #[test]
    fn a_ticket_is_redeemed_by_a_later_round_that_committed_its_run() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let group = Arc::new(GroupCommit::default());
        let ticket = group.ticket(key("a"));
        runtime.block_on(async {
            let waiting = tokio::spawn({
                let group = Arc::clone(&group);
                async move { group.durable(&ticket).await }
            });
            tokio::task::yield_now().await;
            // A round that started before the records waited does not count …
            group.finish(0, HashSet::new());
            // … nor one in which the run's commit failed …
            let round = group.begin();
            group.finish(round, HashSet::from([key("a")]));
            tokio::task::yield_now().await;
            assert!(!waiting.is_finished());
            // … a later one that committed it does.
            let round = group.begin();
            group.finish(round, HashSet::from([key("b")]));
            waiting.await.unwrap().unwrap();
        });
    }

    #[test]
    fn batch_is_refused_by_name() {
        assert_eq!("group".parse::<Commit>(), Ok(Commit::Group));
        let error = "batch".parse::<Commit>().unwrap_err();
        assert!(error.contains("async"), "{error}");
    }
}
