//! The gateway as the SDK's `ServerHandler`: each method of the protocol mapped onto the
//! gateway's call path or its routes.

use super::*;

/// A result of the kind `pick` takes, or an error naming what the upstream sent instead.
pub(super) fn expect<T>(
    result: ServerResult,
    pick: impl FnOnce(ServerResult) -> Result<T, Box<ServerResult>>,
) -> Result<T, ErrorData> {
    pick(result).map_err(|other| {
        ErrorData::internal_error(
            format!(
                "the upstream answered with an unexpected result: {}",
                serde_json::to_string(&other)
                    .unwrap_or_default()
                    .chars()
                    .take(200)
                    .collect::<String>()
            ),
            None,
        )
    })
}

/// The client's request params as the request the gateway forwards.
pub(super) fn request<M: Default, P>(params: P) -> rmcp::model::Request<M, P> {
    rmcp::model::Request::new(params)
}

/// The gateway speaks the protocol through the SDK's server handler, which negotiates each
/// revision (the `initialize` lifecycle and the stateless 2026-07-28 one), checks per-request
/// metadata and capabilities, and shapes every result for the revision the client speaks.
impl ServerHandler for Gateway {
    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.connected(&context.peer);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.connected(&context.peer);
        Ok(ListToolsResult::with_all_items(self.listed_tools().await?))
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.connected(&context.peer);
        let result = self.call(request(params), context).await?;
        expect(result, |result| match result {
            ServerResult::CallToolResult(result) => Ok(CallToolResponse::Complete(result)),
            ServerResult::CreateTaskResult(task) => Ok(CallToolResponse::Task(task)),
            ServerResult::InputRequiredResult(input) => Ok(CallToolResponse::InputRequired(input)),
            other => Err(Box::new(other)),
        })
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.connected(&context.peer);
        self.prompts().await
    }

    async fn get_prompt(
        &self,
        mut params: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let (upstream, prompt) = self.by_prompt(&params.name)?;
        params.name = prompt;
        let result = self
            .pass(
                upstream,
                ClientRequest::GetPromptRequest(request(params)),
                &context,
            )
            .await?;
        expect(result, |result| match result {
            ServerResult::GetPromptResult(result) => Ok(GetPromptResponse::Complete(result)),
            ServerResult::InputRequiredResult(input) => Ok(GetPromptResponse::InputRequired(input)),
            other => Err(Box::new(other)),
        })
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.connected(&context.peer);
        self.resources().await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.connected(&context.peer);
        self.resource_templates().await
    }

    async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let upstream = self.by_uri(&params.uri)?;
        let result = self
            .pass(
                upstream,
                ClientRequest::ReadResourceRequest(request(params)),
                &context,
            )
            .await?;
        expect(result, |result| match result {
            ServerResult::ReadResourceResult(result) => Ok(ReadResourceResponse::Complete(result)),
            ServerResult::InputRequiredResult(input) => {
                Ok(ReadResourceResponse::InputRequired(input))
            }
            other => Err(Box::new(other)),
        })
    }

    async fn subscribe(
        &self,
        params: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let upstream = self.by_uri(&params.uri)?;
        self.pass(
            upstream,
            ClientRequest::SubscribeRequest(request(params)),
            &context,
        )
        .await?;
        Ok(())
    }

    async fn unsubscribe(
        &self,
        params: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let upstream = self.by_uri(&params.uri)?;
        self.pass(
            upstream,
            ClientRequest::UnsubscribeRequest(request(params)),
            &context,
        )
        .await?;
        Ok(())
    }

    async fn complete(
        &self,
        mut params: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let upstream = match &mut params.r#ref {
            Reference::Prompt(prompt) => {
                let (upstream, name) = self.by_prompt(&prompt.name)?;
                prompt.name = name;
                upstream
            }
            Reference::Resource(template) => self
                .routed(&template.uri)
                .ok_or_else(|| Self::unrouted("resource template", &template.uri))?,
            _ => self.only("completion/complete")?,
        };
        let result = self
            .pass(
                upstream,
                ClientRequest::CompleteRequest(request(params)),
                &context,
            )
            .await?;
        expect(result, |result| match result {
            ServerResult::CompleteResult(result) => Ok(result),
            other => Err(Box::new(other)),
        })
    }

    async fn set_level(
        &self,
        params: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.connected(&context.peer);
        for upstream in self.with_capability(|caps| caps.logging.is_some()) {
            self.pass(
                upstream,
                ClientRequest::SetLevelRequest(request(params.clone())),
                &context,
            )
            .await?;
        }
        Ok(())
    }

    async fn get_task(
        &self,
        params: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let upstream = self.by_task(&params.task_id)?;
        let result = self
            .pass(
                upstream,
                ClientRequest::GetTaskRequest(request(params)),
                &context,
            )
            .await?;
        expect(result, |result| match result {
            ServerResult::GetTaskResult(result) => Ok(result),
            other => Err(Box::new(other)),
        })
    }

    async fn update_task(
        &self,
        params: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let upstream = self.by_task(&params.task_id)?;
        self.pass(
            upstream,
            ClientRequest::UpdateTaskRequest(request(params)),
            &context,
        )
        .await?;
        Ok(())
    }

    async fn cancel_task(
        &self,
        params: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let upstream = self.by_task(&params.task_id)?;
        self.pass(
            upstream,
            ClientRequest::CancelTaskRequest(request(params)),
            &context,
        )
        .await?;
        Ok(())
    }

    async fn on_custom_request(
        &self,
        custom: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let method = custom.method.clone();
        let upstream = self.only(&method)?;
        let result = self
            .pass(upstream, ClientRequest::CustomRequest(custom), &context)
            .await?;
        expect(result, |result| match result {
            ServerResult::CustomResult(result) => Ok(result),
            other => Err(Box::new(other)),
        })
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.connected(&context.peer);
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.connected(&context.peer);
        for upstream in &self.inner.upstreams {
            let _ = upstream
                .peer()
                .send_notification(ClientNotification::RootsListChangedNotification(
                    rmcp::model::RootsListChangedNotification::default(),
                ))
                .await;
        }
    }

    fn get_info(&self) -> InitializeResult {
        self.inner.info.clone()
    }
}
