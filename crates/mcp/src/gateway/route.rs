//! Everything but a tool call: forwarding a request to the upstream it belongs to (its
//! `_meta`, progress and cancellation carried), the lists of every upstream in one, and the
//! routes of resources, prompts and tasks.

use super::*;

impl Gateway {
    /// Sends `request` to `upstream` on behalf of the client's request `context`: its
    /// `_meta` carried (trace context included), its progress relayed, its cancellation
    /// passed on, and — for a tool call — the configured time limit.
    pub(super) async fn forward(
        &self,
        upstream: &Upstream,
        request: ClientRequest,
        context: &RequestContext<RoleServer>,
        timed: bool,
        span: &RequestSpan,
    ) -> Result<ServerResult, Forwarded> {
        self.connected(&context.peer);
        // A server whose connection broke is started again first; if it cannot be, the
        // request is not sent.
        upstream
            .revive()
            .await
            .map_err(|e| Forwarded::NotSent(format!("{e}; the call was not sent")))?;
        let mut meta: RequestMetaObject = context.meta.clone();
        let theirs = meta.get_progress_token();
        meta.remove("progressToken");
        // The upstream's work is a child of the gateway's span.
        if let Some(traceparent) = span.traceparent() {
            meta.insert("traceparent".to_owned(), Value::String(traceparent));
        }
        let mut options = PeerRequestOptions::no_options().with_meta(meta);
        if timed {
            options.timeout = Some(self.inner.config.call_timeout);
        }
        let handle = upstream
            .peer()
            .send_request_with_option(request, options)
            .await
            .map_err(|e| {
                Forwarded::NotSent(format!(
                    "the upstream server `{}` is not available ({e}); the call was not sent",
                    upstream.name
                ))
            })?;
        let ours = handle.progress_token.clone();
        if let Some(theirs) = theirs {
            self.inner
                .relay
                .track_progress(&upstream.name, ours.clone(), self.session.id, theirs);
        }
        self.inner.relay.begin(self.session.id, &upstream.name);
        let id = handle.id.clone();
        let peer = upstream.peer();
        let answer = tokio::select! {
            answer = handle.await_response() => answer.map_err(|error| match error {
                rmcp::ServiceError::McpError(error) => Forwarded::Error(error),
                rmcp::ServiceError::Timeout { timeout } => Forwarded::Lost(format!(
                    "`{}` did not answer within {} s", upstream.name, timeout.as_secs()
                )),
                other => Forwarded::Lost(format!("`{}` broke off: {other}", upstream.name)),
            }),
            () = context.ct.cancelled() => {
                let cancel = rmcp::model::CancelledNotification::new(
                    rmcp::model::CancelledNotificationParam::new(Some(id), Some("cancelled by the client".to_owned())),
                );
                let _ = peer.send_notification(cancel.into()).await;
                Err(Forwarded::Lost(format!("the client cancelled the request after it was forwarded to `{}`", upstream.name)))
            }
        };
        // What the upstream sent before its answer reaches the client before the answer.
        self.inner.relay.drain().await;
        self.inner.relay.untrack_progress(&upstream.name, &ours);
        self.inner.relay.end(self.session.id, &upstream.name);
        answer
    }

    /// Forwards a request that is not a tool call, as it is, to `upstream`.
    pub(super) async fn pass(
        &self,
        upstream: &Upstream,
        request: ClientRequest,
        context: &RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let span = self.span(request.method(), None, context);
        let answer = self
            .forward(upstream, request, context, false, &span)
            .await
            .map_err(|error| match error {
                Forwarded::Error(error) => error,
                Forwarded::NotSent(reason) | Forwarded::Lost(reason) => {
                    ErrorData::internal_error(reason, None)
                }
            });
        span.end(error_type(&answer).as_deref());
        answer
    }

    pub(super) fn route(&self, key: String, server: &str) {
        if let Some((index, _)) = self.upstream(server) {
            self.inner
                .routes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key, index);
        }
    }

    /// The upstream a resource URI (or a task id) belongs to: the one that listed it, or a
    /// template's whose fixed prefix it starts with, or the only upstream with resources.
    pub(super) fn routed(&self, key: &str) -> Option<&Upstream> {
        let routes = self
            .inner
            .routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(index) = routes.get(key) {
            return self.inner.upstreams.get(*index);
        }
        let by_template = routes
            .iter()
            .filter_map(|(template, index)| {
                let prefix = template.split('{').next().unwrap_or_default();
                (template.contains('{') && !prefix.is_empty() && key.starts_with(prefix))
                    .then_some((prefix.len(), *index))
            })
            .max();
        drop(routes);
        if let Some((_, index)) = by_template {
            return self.inner.upstreams.get(index);
        }
        let mut with_resources = self.inner.upstreams.iter().filter(|upstream| {
            upstream
                .peer()
                .peer_info()
                .is_some_and(|info| info.capabilities.resources.is_some())
        });
        match (with_resources.next(), with_resources.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    }

    pub(super) fn unrouted(what: &str, key: &str) -> ErrorData {
        ErrorData::invalid_params(
            format!("no upstream server is known for the {what} `{key}` (list it first)"),
            None,
        )
    }

    pub(super) async fn prompts(&self) -> Result<ListPromptsResult, ErrorData> {
        let mut listed: Vec<Prompt> = Vec::new();
        for upstream in self.with_capability(|caps| caps.prompts.is_some()) {
            let prompts = upstream
                .peer()
                .list_all_prompts()
                .await
                .map_err(|e| upstream_error(&upstream.name, &e))?;
            listed.extend(prompts.into_iter().map(|mut prompt| {
                prompt.name = names::exposed(&upstream.name, &prompt.name);
                prompt
            }));
        }
        Ok(ListPromptsResult::with_all_items(listed))
    }

    pub(super) async fn resources(&self) -> Result<ListResourcesResult, ErrorData> {
        let mut listed = Vec::new();
        for upstream in self.with_capability(|caps| caps.resources.is_some()) {
            let resources = upstream
                .peer()
                .list_all_resources()
                .await
                .map_err(|e| upstream_error(&upstream.name, &e))?;
            for resource in &resources {
                self.route(resource.uri.clone(), &upstream.name);
            }
            listed.extend(resources);
        }
        Ok(ListResourcesResult::with_all_items(listed))
    }

    pub(super) async fn resource_templates(
        &self,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let mut listed = Vec::new();
        for upstream in self.with_capability(|caps| caps.resources.is_some()) {
            let templates = upstream
                .peer()
                .list_all_resource_templates()
                .await
                .map_err(|e| upstream_error(&upstream.name, &e))?;
            for template in &templates {
                self.route(template.uri_template.clone(), &upstream.name);
            }
            listed.extend(templates);
        }
        Ok(ListResourceTemplatesResult::with_all_items(listed))
    }

    pub(super) fn with_capability(
        &self,
        has: impl Fn(&ServerCapabilities) -> bool,
    ) -> Vec<&Upstream> {
        self.inner
            .upstreams
            .iter()
            .filter(|upstream| {
                upstream
                    .peer()
                    .peer_info()
                    .is_some_and(|info| has(&info.capabilities))
            })
            .collect()
    }

    /// The only upstream, for a request the gateway cannot route by name.
    pub(super) fn only(&self, method: &str) -> Result<&Upstream, ErrorData> {
        match self.inner.upstreams.as_slice() {
            [only] => Ok(only),
            _ => Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "`{method}` cannot be routed to one of the gateway's several upstream servers"
                ),
                None,
            )),
        }
    }
}

/// How a forwarded request failed.
pub(super) enum Forwarded {
    /// It could not be sent: the upstream is gone.
    NotSent(String),
    /// The upstream answered with a JSON-RPC error.
    Error(ErrorData),
    /// No answer: it broke off, timed out, or the client cancelled.
    Lost(String),
}

impl Gateway {
    pub(super) fn by_uri(&self, uri: &str) -> Result<&Upstream, ErrorData> {
        self.routed(uri)
            .ok_or_else(|| Self::unrouted("resource", uri))
    }

    pub(super) fn by_task(&self, task: &str) -> Result<&Upstream, ErrorData> {
        self.routed_task(task)
            .ok_or_else(|| Self::unrouted("task", task))
    }

    /// The upstream of an exposed prompt's name, and the prompt's own name there.
    pub(super) fn by_prompt(&self, exposed: &str) -> Result<(&Upstream, String), ErrorData> {
        let (server, name) =
            names::split(exposed).ok_or_else(|| Self::unrouted("prompt", exposed))?;
        let (_, upstream) = self
            .upstream(server)
            .ok_or_else(|| Self::unrouted("prompt", exposed))?;
        Ok((upstream, name.to_owned()))
    }

    pub(super) fn routed_task(&self, task: &str) -> Option<&Upstream> {
        let index = *self
            .inner
            .routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(task)?;
        self.inner.upstreams.get(index)
    }
}

pub(super) fn upstream_error(server: &str, error: &rmcp::ServiceError) -> ErrorData {
    match error {
        rmcp::ServiceError::McpError(error) => error.clone(),
        other => {
            ErrorData::internal_error(format!("the upstream server `{server}`: {other}"), None)
        }
    }
}
