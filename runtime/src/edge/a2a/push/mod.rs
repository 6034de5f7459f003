//! A2A push notifications on the A2A edge: reading the four configuration operations
//! (both bindings call these) and SendMessage's inline configuration, rendering their
//! answers and the push bodies. Storing, guarding and delivering are `ops::push`'s.
//!
//! Rules kept here (interop.md §"A2A push delivery", map rows of the four methods):
//! - a URL passes the egress guard at registration, and again at every delivery;
//! - `token` and `authentication.credentials` are stored apart, by reference, and never
//!   returned, logged, written to the event log or to the task rows;
//! - a configId is random and encodes nothing about who registered it;
//! - every failed lookup (unknown or unreadable task, unknown or foreign configId)
//!   answers one byte-identical TaskNotFoundError; delete of an absent config succeeds.

use openwop_generated::errors::A2aError;
use openwop_generated::models::{
    A2aAuthenticationInfo, A2aListTaskPushNotificationConfigsResponse, A2aPushConfigRequest,
    A2aTaskPushNotificationConfig,
};

pub mod config;

use super::errors::Fault;
use super::project::Shape;

use super::service::A2aState;
use crate::identity::Subject;
use crate::ops::push::{NewPushConfig, PushRender, Rendered, StoredConfig};
use crate::ops::{OpError, RunRecord};
use config::check_config;

/// Push bodies are A2A `StreamResponse`s: the projection of the task as it stands.
pub struct Render(pub A2aState);

impl PushRender for Render {
    fn render<'a>(
        &'a self,
        run: &'a RunRecord,
    ) -> futures::future::BoxFuture<'a, Option<Rendered>> {
        Box::pin(async move {
            let projected = self
                .0
                .project(
                    run,
                    Shape {
                        history_length: Some(0),
                        include_artifacts: true,
                    },
                )
                .await
                .ok()?;
            let last = projected.status.is_terminal();
            // A final state carries the whole task (outputs included); others a status update.
            let body = if last {
                projected.as_stream_task()
            } else {
                projected.as_status_update()
            };
            Some(Rendered {
                state: projected.wire_state,
                body: serde_json::to_string(&body).ok()?,
                last,
            })
        })
    }
}

/// The one answer for every push-config lookup that finds nothing the caller may see.
/// It echoes no id, so an unreadable task, an unknown one and a configId of another task
/// cannot be told apart.
pub fn not_found() -> Fault {
    Fault::a2a(
        A2aError::TaskNotFound,
        "task or push notification config not found",
    )
}

/// The configuration as every answer shows it: no token, no credentials.
pub fn view(config: &StoredConfig) -> A2aTaskPushNotificationConfig {
    A2aTaskPushNotificationConfig {
        id: Some(config.config_id.clone()),
        task_id: Some(config.run_id.clone()),
        url: Some(config.url.clone()),
        token: None,
        authentication: config.scheme.as_ref().map(|scheme| A2aAuthenticationInfo {
            scheme: scheme.clone(),
            credentials: None,
        }),
        tenant: None,
    }
}

/// A named id of a request (`taskId`, `id`): present and not empty.
fn required<'a>(value: &'a Option<String>, field: &str) -> Result<&'a str, Fault> {
    value
        .as_deref()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Fault::invalid_params(field, "is required"))
}

impl A2aState {
    /// A task the caller may read, for a push-config operation: anything else is the one
    /// not-found answer, whichever id was unknown.
    async fn push_task(&self, subject: &Subject, task_id: &str) -> Result<RunRecord, Fault> {
        self.load(subject, task_id).await.map_err(|f| {
            if f.reason() == Some("TASK_NOT_FOUND") {
                not_found()
            } else {
                f
            }
        })
    }

    /// Checks a new configuration's URL now; a refusal names the field at `at`.
    pub async fn check_push_url(&self, config: &NewPushConfig, at: &str) -> Result<(), Fault> {
        let field = if at.is_empty() {
            "url".to_owned()
        } else {
            format!("{at}.url")
        };
        self.app
            .ops
            .check_push_url(&config.url)
            .await
            .map_err(|e| match e {
                OpError::Validation { message, .. } => Fault::invalid_params(&field, message),
                e => e.into(),
            })
    }

    /// Stores a configuration that already passed [`Self::check_push_url`].
    pub async fn store_push_config(
        &self,
        run: &RunRecord,
        config: NewPushConfig,
    ) -> Result<StoredConfig, Fault> {
        Ok(self.app.ops.add_push_config(run, config).await?)
    }

    /// CreateTaskPushNotificationConfig: the request is the configuration itself, with
    /// the task's id.
    pub async fn create_push_config(
        &self,
        subject: &Subject,
        request: A2aTaskPushNotificationConfig,
    ) -> Result<A2aTaskPushNotificationConfig, Fault> {
        let task_id = required(&request.task_id, "taskId")?.to_owned();
        let run = self.push_task(subject, &task_id).await?;
        let mut config = check_config(request, "")?;
        self.check_push_url(&config, "").await?;
        // A2A 1.0 §3.1.7 has no error for a finished task: the configuration is kept (read,
        // listed and deleted as any other) and simply never fires. Its secrets would never
        // be sent, so they are not stored.
        if run.status.is_terminal() {
            config.secret = Default::default();
        }
        Ok(view(&self.store_push_config(&run, config).await?))
    }

    pub async fn get_push_config(
        &self,
        subject: &Subject,
        request: A2aPushConfigRequest,
    ) -> Result<A2aTaskPushNotificationConfig, Fault> {
        let task_id = required(&Some(request.task_id), "taskId")?.to_owned();
        let id = required(&request.id, "id")?;
        let run = self.push_task(subject, &task_id).await?;
        match self.app.ops.push_config(&run, id).await? {
            Some(config) => Ok(view(&config)),
            None => Err(not_found()),
        }
    }

    pub async fn list_push_configs(
        &self,
        subject: &Subject,
        request: A2aPushConfigRequest,
    ) -> Result<A2aListTaskPushNotificationConfigsResponse, Fault> {
        let task_id = required(&Some(request.task_id), "taskId")?.to_owned();
        let run = self.push_task(subject, &task_id).await?;
        let configs = self.app.ops.push_configs(&run).await?;
        // One page holds them all: a task has few configurations.
        Ok(A2aListTaskPushNotificationConfigsResponse {
            configs: configs.iter().map(view).collect(),
            next_page_token: String::new(),
        })
    }

    pub async fn delete_push_config(
        &self,
        subject: &Subject,
        request: A2aPushConfigRequest,
    ) -> Result<(), Fault> {
        let task_id = required(&Some(request.task_id), "taskId")?.to_owned();
        let id = required(&request.id, "id")?;
        let run = self.push_task(subject, &task_id).await?;
        // Absent (or another task's) is the same success: delete is idempotent.
        self.app.ops.delete_push_config(&run, id).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::config::parse_config;
    use super::*;
    use serde_json::json;

    #[test]
    fn configs_are_validated_and_views_never_hold_secrets() {
        let ok = json!({"url": "https://r.test/h", "token": "tok", "authentication": {"scheme": "Basic", "credentials": "cred"}});
        let c = parse_config(&ok, "").expect("valid");
        assert_eq!(c.secret.token.as_deref(), Some("tok"));
        assert_eq!(c.scheme.as_deref(), Some("Basic"));
        for bad in [
            json!({}),
            json!({"url": "https://r.test", "token": "a\r\nX-Evil: 1"}),
            json!({"url": "https://r.test", "authentication": {"scheme": "Bad Scheme"}}),
            json!({"url": "https://r.test", "authentication": "Basic x"}),
            json!({"url": "https://r.test", "id": "a/b"}),
        ] {
            assert_eq!(
                parse_config(&bad, "").err().map(|f| f.jsonrpc_code()),
                Some(-32602),
                "{bad}"
            );
        }
        let stored = StoredConfig {
            run_id: "t/r".into(),
            config_id: "pc-1".into(),
            url: "https://r.test/h".into(),
            scheme: Some("Basic".into()),
            created_ms: 0,
        };
        let shown = serde_json::to_string(&view(&stored)).expect("json");
        assert!(
            !shown.contains("credentials") && !shown.contains("token"),
            "{shown}"
        );
    }
}
