//! What a source changes on the board, under its lock ([`super::Board::batch`]): the records
//! read, pressure records and folded frames applied to their sessions, the alerts their figures
//! fire or clear, the source's status, idle sessions leaving the live board.

use super::*;

/// Changes to the board under its lock: see [`Board::batch`].
pub(crate) struct Changes<'a> {
    pub(super) inner: &'a mut Inner,
    pub(super) board: &'a Board,
    pub(super) now: i64,
    /// The records applied are a topic's recent history read again at the start
    /// ([`Changes::catching_up`]).
    pub(super) catching_up: bool,
}

impl Changes<'_> {
    /// Whether the records applied next are history read again (a topic's records produced
    /// before the board started): their crossings move the alert state and send no notice, counted in
    /// `alerts_caught_up`; the alerts still firing after it reach Alertmanager by its re-send,
    /// the same alerts it already holds (the webhook, which keeps no memory, hears none).
    pub(crate) fn catching_up(&mut self, yes: bool) {
        self.catching_up = yes;
    }

    /// Records read from the source (log lines, events, records on stdin or a topic).
    pub(crate) fn read(&mut self, n: u64) {
        self.inner.status.records += n;
    }

    /// One record skipped, and why.
    pub(crate) fn skip(&mut self, why: String) {
        self.inner.status.skipped += 1;
        self.inner.status.last_skipped = Some(why);
    }

    /// Sets the status line.
    pub(crate) fn status(&mut self, state: SourceState, message: impl Into<String>) {
        self.inner.status.state = state;
        self.inner.status.message = message.into();
    }

    /// The logs of `sessions` are read again from their start (a file truncated, replaced,
    /// rewritten in place, or back after vanishing; docs/serve.md, "Sources"): those sessions
    /// leave the board (a `gone` each) and come back as their lines are read again, every
    /// other session untouched. Their alert state is set aside: until
    /// [`Changes::reread_done`] their records move it and page no one, so a session re-read
    /// pages no one for what it paged already.
    pub(crate) fn reread(&mut self, sessions: &Sessions, why: &str) {
        let ids: Vec<Arc<str>> = match sessions {
            Sessions::These(ids) => ids.clone(),
            Sessions::All => self.inner.sessions.keys().cloned().collect(),
        };
        for id in &ids {
            let inner = &mut *self.inner;
            let parked = match inner.sessions.remove(id) {
                Some(s) => {
                    inner.by_activity.remove(&s.order);
                    inner.points -= s.history.len();
                    Parked {
                        firing: s.firing,
                        fired_at: s.fired_at,
                    }
                }
                None => Parked {
                    firing: inner
                        .evicted_firing
                        .remove(id)
                        .map_or_else(Firing::default, |(f, _)| f),
                    fired_at: Vec::new(),
                },
            };
            // Read again before the last re-read ended: the state before that one stands.
            inner.rereading.entry(Arc::clone(id)).or_insert(parked);
            self.touch(id);
        }
        self.inner.status.reset = Some(why.to_owned());
        // Said once where it happened (`log_event`); here only for a closer look.
        tracing::debug!(
            reason = why,
            sessions = ids.len(),
            "a log is read again from its start: its sessions are rebuilt, the others kept"
        );
    }

    /// The re-read of `sessions` has caught up with their logs: each alert that fires now and
    /// did not before is sent, each that fired before and no longer does is resolved, and one
    /// that fired before and fires still is the same alert (its start kept), sent no more. A
    /// session its log no longer names keeps its alert state as an evicted one does.
    pub(crate) fn reread_done(&mut self, sessions: &Sessions) {
        let ids: Vec<Arc<str>> = match sessions {
            Sessions::These(ids) => ids.clone(),
            Sessions::All => self.inner.rereading.keys().cloned().collect(),
        };
        for id in ids {
            let Some(before) = self.inner.rereading.remove(&id) else {
                continue;
            };
            let Some(s) = self.inner.sessions.get_mut(&id) else {
                if before.firing != Firing::default() {
                    self.remember_firing(&id, before.firing);
                }
                continue;
            };
            let now = s.firing;
            let mut said = Vec::new();
            for i in 0..self.board.policy.rules.len().min(alerts::MAX_RULES) {
                match (before.firing.has(i), now.has(i)) {
                    (true, true) => {
                        if let Some(&(_, t)) =
                            before.fired_at.iter().find(|(r, _)| usize::from(*r) == i)
                        {
                            s.fired_at.retain(|(r, _)| usize::from(*r) != i);
                            s.fired_at.push((i as u8, t));
                        }
                    }
                    (false, true) => {
                        let since = s
                            .fired_at
                            .iter()
                            .find(|(r, _)| usize::from(*r) == i)
                            .map_or(s.active, |(_, t)| *t);
                        said.push((AlertStatus::Firing, i, since));
                    }
                    (true, false) => {
                        let since = before
                            .fired_at
                            .iter()
                            .find(|(r, _)| usize::from(*r) == i)
                            .map_or(s.active, |(_, t)| *t);
                        said.push((AlertStatus::Resolved, i, since));
                    }
                    (false, false) => {}
                }
            }
            let Some(record) = s.record.clone() else {
                continue;
            };
            let r = PressureRecord {
                id: Arc::clone(&s.id),
                seq: s.seq,
                is_error: false,
                stamp_ms: None,
                agent: s.agent.clone(),
                model: s.model.clone(),
                latest: s.latest,
                text: record,
            };
            for (status, i, since) in said {
                self.notice(status, i, &r, since);
            }
        }
    }

    /// Something happened to a followed log's file: said on stderr (a file gone or unreadable
    /// at `warn`, the rest at `info`) and counted.
    pub(crate) fn log_event(&mut self, event: LogEvent, what: &str) {
        let i = LogEvent::ALL.iter().position(|e| *e == event).unwrap_or(0);
        self.board.counters.log_events[i].fetch_add(1, Ordering::Relaxed);
        match event {
            LogEvent::Vanished | LogEvent::Unreadable => {
                tracing::warn!(event = event.name(), "{what}")
            }
            _ => tracing::info!(event = event.name(), "{what}"),
        }
    }

    /// Remembers the rules firing for a session no longer kept, the latest [`FIRING_KEPT`]:
    /// back later, it is not alerted again for a crossing it was alerted of.
    fn remember_firing(&mut self, id: &Arc<str>, firing: Firing) {
        let inner = &mut *self.inner;
        inner.evictions += 1;
        let n = inner.evictions;
        inner.evicted_firing.insert(Arc::clone(id), (firing, n));
        inner.evicted_order.push_back((Arc::clone(id), n));
        while inner.evicted_order.len() > FIRING_KEPT {
            let Some((old, m)) = inner.evicted_order.pop_front() else {
                break;
            };
            // Unless evicted again since (a later number stands in the map).
            if inner.evicted_firing.get(&old).is_some_and(|e| e.1 == m) {
                inner.evicted_firing.remove(&old);
            }
        }
    }

    /// Marks `id` changed at a new version.
    fn touch(&mut self, id: &Arc<str>) {
        let inner = &mut *self.inner;
        inner.version += 1;
        let v = inner.version;
        if let Some(s) = inner.sessions.get_mut(id) {
            s.version = v;
        }
        inner.changes.push_back((v, Arc::clone(id)));
        while inner.changes.len() > CHANGES {
            let Some((old, _)) = inner.changes.pop_front() else {
                break;
            };
            inner.floor = inner.floor.max(old);
        }
    }

    /// Session `id`, made when new, its activity `at` (room made first: the idlest goes).
    fn session(&mut self, id: &Arc<str>, at: i64) -> &mut Session {
        if !self.inner.sessions.contains_key(id) {
            while self.inner.sessions.len() >= self.board.policy.max_sessions.max(1) {
                if !self.evict_idlest() {
                    break;
                }
            }
            let inner = &mut *self.inner;
            inner.tiebreak += 1;
            let order = (at, inner.tiebreak);
            inner.by_activity.insert(order, Arc::clone(id));
            // A session read again starts from its alert state before; one evicted and back
            // from what it had.
            let firing = match inner.rereading.get(id) {
                Some(p) => p.firing,
                None => inner
                    .evicted_firing
                    .remove(id)
                    .map_or_else(Firing::default, |(f, _)| f),
            };
            inner.sessions.insert(
                Arc::clone(id),
                Session {
                    id: Arc::clone(id),
                    agent: None,
                    model: None,
                    record: None,
                    error: None,
                    latest: Latest::default(),
                    seq: None,
                    active: at,
                    read_at: self.now,
                    live: true,
                    history: History::default(),
                    folds: VecDeque::new(),
                    firing,
                    fired_at: Vec::new(),
                    compacted_at: VecDeque::new(),
                    order,
                    row: None,
                    version: 0,
                },
            );
        }
        self.inner.sessions.get_mut(id).expect("made above")
    }

    /// Drops the session idle longest; `false` when there is none.
    fn evict_idlest(&mut self) -> bool {
        let Some((_, id)) = self.inner.by_activity.pop_first() else {
            return false;
        };
        let inner = &mut *self.inner;
        if let Some(s) = inner.sessions.remove(&id) {
            inner.points -= s.history.len();
            // Being read again, the state set aside stands for it; else it is remembered.
            if s.firing != Firing::default() && !inner.rereading.contains_key(&id) {
                self.remember_firing(&id, s.firing);
            }
        }
        self.board.counters.evicted.fetch_add(1, Ordering::Relaxed);
        self.touch(&id);
        true
    }

    /// Moves a session's activity to `at`.
    fn active(&mut self, id: &Arc<str>, at: i64) {
        let inner = &mut *self.inner;
        let Some(s) = inner.sessions.get_mut(id) else {
            return;
        };
        if at <= s.active {
            return;
        }
        inner.by_activity.remove(&s.order);
        inner.tiebreak += 1;
        s.active = s.active.max(at);
        s.order = (s.active, inner.tiebreak);
        inner.by_activity.insert(s.order, Arc::clone(id));
    }

    /// A pressure record (`context/pressure` or `context/error`, contract §3), parsed before the
    /// lock by [`PressureRecord::parse`]. One older than its session's latest (a re-delivery)
    /// changes nothing and is `false`.
    pub(crate) fn pressure(&mut self, mut r: PressureRecord) -> bool {
        let (now, board) = (self.now, self.board);
        // Activity is the record's own stamp, never ahead of the clock; else now.
        let at = r.stamp_ms.map_or(now, |t| t.min(now));
        let s = self.session(&r.id, at);
        // The meter's own rule: a lower seq would turn back time; an equal one may be the
        // error about the frame the last figures came from.
        if let (Some(new), Some(old)) = (r.seq, s.seq)
            && new < old
        {
            return false;
        }
        if r.seq.is_some() {
            s.seq = r.seq;
        }
        s.read_at = now;
        s.agent = r.agent.clone().or(s.agent.take());
        s.model = r.model.clone().or(s.model.take());
        // (rule, when its alert began) crossed into and back out of.
        let mut crossed: Vec<(usize, i64)> = Vec::new();
        let mut cleared: Vec<(usize, i64)> = Vec::new();
        let mut points = 0;
        if r.is_error {
            s.error = Some(Arc::clone(&r.text));
        } else {
            s.error = None;
            s.record = Some(Arc::clone(&r.text));
            // Compactions seen happening: counted, and kept for a `thrash` rule (a session
            // first seen with some counts none: they came before the board saw it).
            let latest = &mut r.latest;
            if let (Some(new), Some(old)) = (latest.compactions, s.latest.compactions)
                && new > old
            {
                board
                    .counters
                    .compacted(s.agent.as_deref(), latest.last_trigger, new - old);
                for _ in 0..(new - old).min(COMPACTIONS_KEPT as u64) {
                    if s.compacted_at.len() == COMPACTIONS_KEPT {
                        s.compacted_at.pop_front();
                    }
                    s.compacted_at.push_back(at);
                }
            }
            let window = board.policy.thrash_window.as_millis() as i64;
            latest.recent_compactions = Some(
                s.compacted_at
                    .iter()
                    .filter(|t| **t > at.saturating_sub(window))
                    .count() as u64,
            );
            s.latest = *latest;
            if let Some(seq) = r.seq {
                points = s.history.add(r.latest.figures(seq));
            }
            let (c, ended) = s.firing.step_both(&board.policy.rules, &s.latest);
            // An alert ends with the start it had (the crossing's stamp, when the board saw
            // it); a new one starts at this record.
            cleared = ended
                .into_iter()
                .map(|i| {
                    let began = s.fired_at.iter().find(|(j, _)| usize::from(*j) == i);
                    (i, began.map_or(at, |(_, t)| *t))
                })
                .collect();
            s.fired_at
                .retain(|(i, _)| !cleared.iter().any(|(j, _)| *j == usize::from(*i)));
            s.fired_at.extend(c.iter().map(|i| (*i as u8, at)));
            crossed = c.into_iter().map(|i| (i, at)).collect();
        }
        self.inner.points = (self.inner.points as isize + points) as usize;
        self.active(&r.id, at);
        let live =
            now - self.inner.sessions[&r.id].active <= self.board.policy.idle.as_millis() as i64;
        self.inner.sessions.get_mut(&r.id).expect("made above").live = live;
        // A record older than `idle` (by its own stamp: a topic's history read again at a
        // restart, a log caught up) moves the figures and the alert state, and pages no one:
        // the crossing it holds is history, not news.
        let old = now - at > self.board.policy.idle.as_millis() as i64;
        // A log read again from its start: its crossings are what was paged already, or are
        // said at the re-read's end (`reread_done`).
        let reread = self.inner.rereading.contains_key(&r.id);
        if old || self.catching_up || reread {
            let n = crossed.len() as u64;
            let counter = if reread {
                &self.board.counters.alerts_reread
            } else if old {
                &self.board.counters.alerts_old
            } else {
                &self.board.counters.alerts_caught_up
            };
            counter.fetch_add(n, Ordering::Relaxed);
        } else {
            // The crossing back ends the alert: the receiver hears it resolved.
            let notices = crossed.into_iter().map(|c| (AlertStatus::Firing, c));
            for (status, (i, since)) in
                notices.chain(cleared.into_iter().map(|c| (AlertStatus::Resolved, c)))
            {
                self.notice(status, i, &r, since);
            }
        }
        self.touch(&r.id);
        while self.inner.points > self.board.policy.history_points {
            if !self.evict_idlest() {
                break;
            }
        }
        true
    }

    /// Rule `i`'s alert for `r`'s session fired or ended: said in the log (a firing at `warn`,
    /// its end at `info`), counted (a firing), and handed to each receiver's outbox, never
    /// waiting. `since` is when the alert began.
    fn notice(&mut self, status: AlertStatus, i: usize, r: &PressureRecord, since: i64) {
        let rule = &self.board.policy.rules[i];
        let value = rule.value(&r.latest).unwrap_or(f64::NAN);
        let (id, seq) = (&r.id, r.seq);
        match status {
            AlertStatus::Firing => {
                self.board.counters.alerts[i].fetch_add(1, Ordering::Relaxed);
                tracing::warn!(target: "agent_fold::alert", rule = %rule, session = %id, value, seq,
                    "session {id} crossed {rule}");
            }
            AlertStatus::Resolved => {
                tracing::info!(target: "agent_fold::alert", rule = %rule, session = %id, value, seq,
                    "session {id} is back past {rule}: its alert is resolved");
            }
        }
        let receivers = &self.board.receivers;
        if receivers.is_empty() {
            return;
        }
        let alert = Alert {
            status,
            rule: rule.text.clone(),
            session: Arc::clone(&r.id),
            agent: r.agent.clone(),
            model: r.model.clone(),
            value,
            threshold: rule.threshold,
            seq: r.seq,
            record: Arc::clone(&r.text),
            at: self.now,
            since,
            merged: 0,
        };
        for outbox in receivers {
            outbox.push(alert.clone());
        }
    }

    /// A folded frame ([`Folded::parse`]): joins its session's list.
    pub(crate) fn frame(&mut self, f: Folded) {
        let now = self.now;
        let s = self.session(&f.id, now);
        s.folds.push_back(f.shown);
        while s.folds.len() > FOLDS {
            s.folds.pop_front();
        }
        s.read_at = now;
        self.touch(&f.id);
    }

    /// Sessions idle past the bound leave the live board.
    pub(super) fn sweep(&mut self) {
        let cutoff = self.now - self.board.policy.idle.as_millis() as i64;
        let stale: Vec<Arc<str>> = self
            .inner
            .by_activity
            .range(..(cutoff, 0))
            .filter(|(_, id)| self.inner.sessions.get(*id).is_some_and(|s| s.live))
            .map(|(_, id)| Arc::clone(id))
            .collect();
        for id in stale {
            if let Some(s) = self.inner.sessions.get_mut(&id) {
                s.live = false;
            }
            self.touch(&id);
        }
    }
}
