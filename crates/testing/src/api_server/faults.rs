//! Rules that make requests misbehave: fail, hang, answer something else, or take time on the fake
//! clock. A controller's error paths are tested through the server's answers, as they happen in
//! production, not through a mock that returns errors from inside the controller.

use std::time::Duration;

use serde_json::Value;

use super::{ApiServer, request::Request, request::Verb, routes::Refusal};
use crate::FakeClock;

#[derive(Debug, Clone)]
enum Action {
    Fail(Refusal),
    Hang,
    Drop,
    LoseAnswer,
    Answer(u16, Value),
    Takes(Duration),
}

#[derive(Debug, Clone)]
pub(super) struct Rule {
    verb: Verb,
    resource: String,
    subresource: Option<String>,
    name: Option<String>,
    /// Matching requests let through before the rule acts.
    after: usize,
    /// Matching requests seen so far.
    seen: usize,
    /// How many matching requests it acts on after `after`, at most (`None`: all).
    times: Option<usize>,
    action: Action,
}

/// What the rules decided for one request.
#[derive(Debug)]
pub(super) enum Outcome {
    Serve,
    Fail(Refusal),
    Hang,
    Drop,
    LoseAnswer,
    Answer(u16, Value),
}

/// Applies `rules` in the order they were made: every time rule that matches moves `clock` on, and
/// the first other rule that matches decides.
pub(super) fn decide(rules: &mut [Rule], req: &Request, clock: &FakeClock) -> Outcome {
    for rule in rules.iter_mut() {
        let matches = req.verb == Some(rule.verb)
            && req.resource == rule.resource
            && (rule.subresource.is_none() || req.subresource == rule.subresource)
            && (rule.name.is_none() || req.name == rule.name);
        if !matches {
            continue;
        }
        rule.seen += 1;
        if rule.seen <= rule.after || rule.times.is_some_and(|n| rule.seen > rule.after + n) {
            continue;
        }
        match &rule.action {
            Action::Takes(d) => clock.advance(*d),
            Action::Fail(refusal) => return Outcome::Fail(refusal.clone()),
            Action::Hang => return Outcome::Hang,
            Action::Drop => return Outcome::Drop,
            Action::LoseAnswer => return Outcome::LoseAnswer,
            Action::Answer(code, body) => return Outcome::Answer(*code, body.clone()),
        }
    }
    Outcome::Serve
}

/// A rule being made: [`ApiServer::on`] names the verb and resource, the methods narrow it, and one
/// of the last six adds it to the server.
#[derive(Debug)]
#[must_use = "a rule takes effect only once fail, hang, answer or takes adds it"]
pub struct When<'a> {
    server: &'a ApiServer,
    rule: Rule,
}

impl<'a> When<'a> {
    pub(super) fn new(server: &'a ApiServer, verb: Verb, resource: &str) -> When<'a> {
        When {
            server,
            rule: Rule {
                verb,
                resource: resource.to_owned(),
                subresource: None,
                name: None,
                after: 0,
                seen: 0,
                times: None,
                action: Action::Hang,
            },
        }
    }

    /// Only requests to this subresource (`status`); without it the rule matches the object and every
    /// subresource.
    pub fn subresource(mut self, subresource: &str) -> Self {
        self.rule.subresource = Some(subresource.to_owned());
        self
    }

    /// Only requests for the object of this name (for a creation: the name or generateName sent).
    pub fn named(mut self, name: &str) -> Self {
        self.rule.name = Some(name.to_owned());
        self
    }

    /// Lets the first `n` matching requests through (a quota of `n` creations, `n` status writes
    /// before the controller "dies").
    pub fn after(mut self, n: usize) -> Self {
        self.rule.after = n;
        self
    }

    /// Acts on the first `n` matching requests (after those [`When::after`] lets through), then lets
    /// the rest through: a connection lost once.
    pub fn times(mut self, n: usize) -> Self {
        self.rule.times = Some(n);
        self
    }

    /// Answers with a `Status` of this code, reason and message.
    pub fn fail(self, code: u16, reason: &str, message: &str) {
        self.add(Action::Fail(Refusal::new(code, reason, message)));
    }

    /// Never answers: the caller's future stays pending until the test drops it.
    pub fn hang(self) {
        self.add(Action::Hang);
    }

    /// Drops the connection with the request on it, unanswered and not served (a reset): the caller
    /// gets a transport error, not a `Status`.
    pub fn drop_connection(self) {
        self.add(Action::Drop);
    }

    /// Serves the request, then drops the connection before the answer: applied, but the caller
    /// gets a transport error.
    pub fn lose_answer(self) {
        self.add(Action::LoseAnswer);
    }

    /// Answers `body` with `code` instead of serving the request (the store is left as it was).
    pub fn answer(self, code: u16, body: Value) {
        self.add(Action::Answer(code, body));
    }

    /// Moves the server's clock on by `d` before serving, as a slow write takes time.
    pub fn takes(self, d: Duration) {
        self.add(Action::Takes(d));
    }

    fn add(mut self, action: Action) {
        self.rule.action = action;
        self.server.state.lock().rules.push(self.rule);
    }
}
