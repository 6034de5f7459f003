//! A2A push notifications: the four configuration operations (both bindings call these),
//! the inline configuration of SendMessage, and delivery (`deliver`).
//!
//! Rules kept here (interop.md §"A2A push delivery", map rows of the four methods):
//! - a URL passes the egress guard at registration, and again at every delivery;
//! - `token` and `authentication.credentials` are stored apart, by reference, and never
//!   returned, logged, written to the event log or to the task rows;
//! - a configId is random and encodes nothing about who registered it;
//! - every failed lookup (unknown or unreadable task, unknown or foreign configId)
//!   answers one byte-identical TaskNotFoundError; delete of an absent config succeeds.

pub mod deliver;

use crate::status::Lifecycle;
use std::sync::Arc;

use openwop_generated::errors::A2aError;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::errors::Fault;
use super::gate::{self, Facts};
use super::service::A2aState;
use crate::egress::{Egress, Refused};
use crate::identity::Subject;
use crate::store::{InteropStore, RunRecord};
pub use crate::store::{Secret, StoredConfig};
pub use deliver::{Backoff, RetryPolicy};

/// What the push side of the A2A edge holds.
#[derive(Clone)]
pub struct Push {
    pub store: Arc<dyn InteropStore>,
    pub egress: Egress,
    kick: mpsc::UnboundedSender<String>,
}

impl Push {
    /// Builds the push side and starts its delivery workers on `state`'s runs.
    pub fn start(
        state: &A2aState,
        store: Arc<dyn InteropStore>,
        egress: Egress,
        policy: RetryPolicy,
    ) -> Push {
        let (kick, rx) = mpsc::unbounded_channel();
        let push = Push {
            store: store.clone(),
            egress: egress.clone(),
            kick,
        };
        let mut with_push = state.clone();
        with_push.push = Some(push.clone());
        deliver::spawn(with_push, store, egress, policy, rx);
        push
    }
}

/// A configuration as a request carries it, validated.
#[derive(Debug, Clone)]
pub struct NewConfig {
    pub id: Option<String>,
    pub url: String,
    pub scheme: Option<String>,
    pub secret: Secret,
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

fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn secret_text(v: Option<&Value>, field: &str) -> Result<Option<String>, Fault> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        // Anything a header value cannot carry (control characters, CR/LF) is refused
        // here rather than silently dropped at delivery.
        Some(Value::String(s)) if s.bytes().all(|b| b == b'\t' || (0x20..0x7f).contains(&b)) => {
            Ok(Some(s.clone()))
        }
        Some(_) => Err(Fault::invalid_params(field, "must be printable ASCII text")),
    }
}

/// Reads a `TaskPushNotificationConfig` (taskId is the caller's business).
pub fn parse_config(v: &Value, at: &str) -> Result<NewConfig, Fault> {
    let field = |f: &str| {
        if at.is_empty() {
            f.to_owned()
        } else {
            format!("{at}.{f}")
        }
    };
    if !v.is_object() {
        return Err(Fault::invalid_params(at, "must be an object"));
    }
    let url = v
        .get("url")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Fault::invalid_params(&field("url"), "is required"))?
        .to_owned();
    let id = match v.get("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s))
            if s.len() <= 128
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b)) =>
        {
            Some(s.clone())
        }
        Some(_) => {
            return Err(Fault::invalid_params(
                &field("id"),
                "must be 1 to 128 characters of A-Z a-z 0-9 - . _ ~",
            ));
        }
    };
    let token = secret_text(v.get("token"), &field("token"))?;
    let (scheme, credentials) = match v.get("authentication") {
        None | Some(Value::Null) => (None, None),
        Some(auth @ Value::Object(_)) => {
            let scheme = auth
                .get("scheme")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty() && s.bytes().all(is_token_char))
                .ok_or_else(|| {
                    Fault::invalid_params(
                        &field("authentication.scheme"),
                        "must be an HTTP authentication scheme",
                    )
                })?;
            let credentials = secret_text(
                auth.get("credentials"),
                &field("authentication.credentials"),
            )?;
            (Some(scheme.to_owned()), credentials)
        }
        Some(_) => {
            return Err(Fault::invalid_params(
                &field("authentication"),
                "must be an object",
            ));
        }
    };
    Ok(NewConfig {
        id,
        url,
        scheme,
        secret: Secret { token, credentials },
    })
}

/// The configuration as every answer shows it: no token, no credentials.
pub fn view(config: &StoredConfig) -> Value {
    let mut v = json!({"id": config.config_id, "taskId": config.run_id, "url": config.url});
    if let Some(scheme) = &config.scheme {
        v["authentication"] = json!({"scheme": scheme});
    }
    v
}

fn refused(e: Refused, at: &str) -> Fault {
    let field = if at.is_empty() {
        "url".to_owned()
    } else {
        format!("{at}.url")
    };
    Fault::invalid_params(&field, format!("refused by the egress guard: {e}"))
}

fn str_param<'a>(params: &'a Value, key: &str) -> Result<&'a str, Fault> {
    params
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Fault::invalid_params(key, "is required"))
}

impl A2aState {
    fn push(&self) -> Result<&Push, Fault> {
        // The facet says push is served exactly when this is set; the gate has already
        // refused otherwise.
        self.push.as_ref().ok_or_else(|| {
            Fault::a2a(
                A2aError::PushNotificationNotSupported,
                "push notifications are not served",
            )
        })
    }

    async fn push_task(&self, subject: &Subject, task_id: &str) -> Result<RunRecord, Fault> {
        self.load(subject, task_id).await.map_err(|f| {
            if f.reason() == Some("TASK_NOT_FOUND") {
                not_found()
            } else {
                f
            }
        })
    }

    /// Checks a new configuration's URL now; the answer names the field at `at`.
    pub async fn check_push_url(&self, config: &NewConfig, at: &str) -> Result<(), Fault> {
        self.push()?
            .egress
            .check(&config.url)
            .await
            .map(|_| ())
            .map_err(|e| refused(e, at))
    }

    /// Stores a configuration that already passed [`Self::check_push_url`] and pushes the
    /// task's current state to it.
    pub async fn store_push_config(
        &self,
        run_id: &str,
        config: NewConfig,
    ) -> Result<StoredConfig, Fault> {
        let push = self.push()?;
        let stored = StoredConfig {
            run_id: run_id.to_owned(),
            config_id: config
                .id
                .unwrap_or_else(|| format!("pc-{}", crate::ids::mint_opaque())),
            url: config.url,
            scheme: config.scheme,
            created_ms: crate::clock::now_ms(),
        };
        push.store
            .push_put(stored.clone(), config.secret)
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "push config could not be stored");
                Fault::internal()
            })?;
        let _ = push.kick.send(run_id.to_owned());
        Ok(stored)
    }

    pub async fn create_push_config(
        &self,
        subject: &Subject,
        params: &Value,
    ) -> Result<Value, Fault> {
        gate::check(
            "CreateTaskPushNotificationConfig",
            &Facts::default(),
            &self.app.discovery.document,
        )?;
        let task_id = str_param(params, "taskId")?;
        let run = self.push_task(subject, task_id).await?;
        let config = parse_config(params, "")?;
        if run.status.is_terminal() {
            return Err(Fault::unsupported(
                "the task is in a terminal state; no further pushes would be sent",
            ));
        }
        self.check_push_url(&config, "").await?;
        Ok(view(&self.store_push_config(&run.run_id, config).await?))
    }

    pub async fn get_push_config(&self, subject: &Subject, params: &Value) -> Result<Value, Fault> {
        gate::check(
            "GetTaskPushNotificationConfig",
            &Facts::default(),
            &self.app.discovery.document,
        )?;
        let (task_id, id) = (str_param(params, "taskId")?, str_param(params, "id")?);
        let run = self.push_task(subject, task_id).await?;
        match self.push()?.store.push_get(&run.run_id, id).await {
            Ok(Some(config)) => Ok(view(&config)),
            Ok(None) => Err(not_found()),
            Err(e) => {
                tracing::error!(error = %e, "push config could not be read");
                Err(Fault::internal())
            }
        }
    }

    pub async fn list_push_configs(
        &self,
        subject: &Subject,
        params: &Value,
    ) -> Result<Value, Fault> {
        gate::check(
            "ListTaskPushNotificationConfigs",
            &Facts::default(),
            &self.app.discovery.document,
        )?;
        let task_id = str_param(params, "taskId")?;
        let run = self.push_task(subject, task_id).await?;
        let configs = self
            .push()?
            .store
            .push_list(&run.run_id)
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "push configs could not be read");
                Fault::internal()
            })?;
        // One page holds them all: a task has few configurations.
        Ok(json!({"configs": configs.iter().map(view).collect::<Vec<_>>(), "nextPageToken": ""}))
    }

    pub async fn delete_push_config(
        &self,
        subject: &Subject,
        params: &Value,
    ) -> Result<Value, Fault> {
        gate::check(
            "DeleteTaskPushNotificationConfig",
            &Facts::default(),
            &self.app.discovery.document,
        )?;
        let (task_id, id) = (str_param(params, "taskId")?, str_param(params, "id")?);
        let run = self.push_task(subject, task_id).await?;
        // Absent (or another task's) is the same success: delete is idempotent.
        self.push()?
            .store
            .push_delete(&run.run_id, id)
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "push config could not be deleted");
                Fault::internal()
            })?;
        Ok(json!({}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let shown = view(&stored).to_string();
        assert!(
            !shown.contains("credentials") && !shown.contains("token"),
            "{shown}"
        );
    }
}
