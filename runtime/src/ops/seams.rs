//! Conformance mode's invoke seams as operations: one exchange through the host's
//! production A2A client (`crate::peers::a2a`) against a URL the suite names, negotiated
//! with the host's own negotiation module and recorded as `negotiation.decided` on the
//! host's log and on a carrier run (`crate::conformance::SEAM_CARRIER_ID`) whose id the
//! answer names. The edge (`edge::rest::seams`) only reads the request and renders this.

use serde_json::{Value, json};

use super::{CreateWith, OpError, Ops, Transport, run_request};
use crate::generated::errors::ErrorCode;
use crate::generated::models::{A2aMessage, A2aPart, A2aRole};
use crate::identity::Subject;
use crate::negotiation::{self, Decision, Protocol};
use crate::peers::mcp_wire::{ElicitResult, ElicitationAction};
use crate::peers::{self, Caller, PeerKind, a2a};
use crate::store::{Guard, HostEventRecord, NewEvent, RunPatch};

/// `POST /conformance/seams/sample/a2a/invoke`, read.
#[derive(Debug, Clone)]
pub struct A2aInvoke {
    pub peer_url: String,
    /// Whether the exchange counts as authenticated (it may then go below preferred).
    pub authenticated: bool,
    /// The version to ask the peer for; unset: the best the peer's card offers.
    pub request_version: Option<String>,
    /// Keep only this version of the peer's offer (its card's interfaces).
    pub peer_offers_only: Option<String>,
    /// The caller's `traceparent`, continued by the exchange.
    pub traceparent: Option<String>,
}

/// `POST /conformance/seams/sample/mcp/invoke`, read.
#[derive(Debug, Clone)]
pub struct McpInvoke {
    pub server_url: String,
    pub authenticated: bool,
    /// The revision to ask for; unset: the host's preferred one (`server/discover`).
    pub request_version: Option<String>,
    pub tool: String,
    pub arguments: Value,
    /// The client capabilities declared to the server; `None`: the host's own (form-mode
    /// elicitation). An input round asking for an elicitation mode they do not offer is
    /// never answered.
    pub client_capabilities: Option<Value>,
    /// The accept content sent for each input round; `None`: every round is declined.
    pub elicitation_answer: Option<Value>,
    pub traceparent: Option<String>,
}

/// A completed exchange.
#[derive(Debug, Clone)]
pub struct Invoked {
    pub negotiated_version: String,
    pub protocol: &'static str,
    /// The carrier run, as createRun names a run.
    pub run_id: String,
    pub peer_digest: String,
    pub result: Value,
    /// MCP only: how many input rounds the call took.
    pub rounds: Option<u32>,
}

/// Why an exchange gave no result: an operation error (no carrier run), or a refusal or
/// failure after the carrier run exists (its id goes in `details`).
#[derive(Debug)]
pub enum InvokeError {
    Op(OpError),
    Failed {
        code: ErrorCode,
        message: String,
        details: Value,
    },
}

impl From<OpError> for InvokeError {
    fn from(e: OpError) -> Self {
        InvokeError::Op(e)
    }
}

impl Ops {
    /// One A2A exchange: the peer's card, the negotiation, then `SendMessage` with
    /// `A2A-Version`. A version below the floor is refused before anything but the card is
    /// read (nothing below the floor goes on the wire); every outcome is recorded.
    pub async fn seam_a2a_invoke(
        &self,
        subject: &Subject,
        req: A2aInvoke,
    ) -> Result<Invoked, InvokeError> {
        let (run, node) = self.carrier(subject, req.traceparent.clone()).await?;
        // As createRun answers it (the bound form).
        let projected = run.run_id.clone();
        let peers = self.engine.peers();
        let peer = peers.seam_peer(
            PeerKind::A2a,
            &req.peer_url,
            &subject.tenant,
            req.authenticated,
        );
        let caller = Caller::for_run(&run.run_id, &run.state);
        let digest = peers.peer_digest(&peer);
        let Some(offer) = peers.offer(Protocol::A2a).cloned() else {
            return Err(
                OpError::internal("conformance seam: this host offers no A2A version").into(),
            );
        };
        let failed = |code: ErrorCode, message: String, reason: &str| InvokeError::Failed {
            code,
            message,
            details: json!({"protocol": "a2a", "runId": projected, "reason": reason}),
        };
        // A requested version is judged against our own offer first: below the floor
        // nothing but this refusal happens.
        if let Some(asked) = &req.request_version {
            let decision =
                negotiation::decide(Protocol::A2a, Some(asked), req.authenticated, &offer)
                    .with_peer(digest.clone());
            if !decision.is_accepted() {
                self.record_negotiation(&run.run_id, &node, &decision)
                    .await?;
                return Err(self
                    .refused(&run.run_id, &node, &projected, &decision, offer.offered())
                    .await);
            }
        }
        let mut card = match a2a::read_card(peers, &peer, &caller).await {
            Ok(card) => card,
            Err(e) => {
                self.close_carrier(&run.run_id, &node, json!({"failed": e.to_string()}))
                    .await;
                return Err(failed(
                    call_code(&e),
                    format!("the peer's agent card: {e}"),
                    "unreachable",
                ));
            }
        };
        let only = req.peer_offers_only.clone().or(req.request_version.clone());
        if let (Some(only), Some(list)) = (
            &only,
            card.get_mut("supportedInterfaces")
                .and_then(Value::as_array_mut),
        ) {
            list.retain(|i| {
                i.get("protocolVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("1.0")
                    == only
            });
        }
        let peer_versions: Vec<String> = card
            .get("supportedInterfaces")
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(|i| i.get("protocolVersion").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let mut remote = match a2a::pick_interface(&card, Some(&offer)) {
            Ok(remote) => remote,
            Err(_) => {
                // The peer offers nothing left to speak: refused as unsupported.
                let decision = negotiation::decide(
                    Protocol::A2a,
                    Some(only.as_deref().unwrap_or("0.0")),
                    req.authenticated,
                    &offer,
                )
                .with_peer(digest.clone());
                let decision = Decision {
                    outcome: negotiation::Outcome::Refused,
                    version: None,
                    reason: negotiation::Reason::Unsupported,
                    ..decision
                };
                self.record_negotiation(&run.run_id, &node, &decision)
                    .await?;
                let supported = peer_versions.iter().map(String::as_str).collect();
                return Err(self
                    .refused(&run.run_id, &node, &projected, &decision, supported)
                    .await);
            }
        };
        let decision = negotiation::decide(
            Protocol::A2a,
            Some(&remote.version),
            req.authenticated,
            &offer,
        )
        .with_peer(digest.clone());
        self.record_negotiation(&run.run_id, &node, &decision)
            .await?;
        let Some(version) = decision.version.clone().filter(|_| decision.is_accepted()) else {
            return Err(self
                .refused(&run.run_id, &node, &projected, &decision, offer.offered())
                .await);
        };
        remote.version = version.clone();
        let message = A2aMessage {
            message_id: Some(format!("conformance-seam-{}", crate::ids::mint_opaque())),
            context_id: None,
            task_id: None,
            role: Some(A2aRole::RoleUser),
            parts: vec![A2aPart {
                text: Some("conformance seam exchange".to_owned()),
                ..A2aPart::default()
            }],
            // Open metadata: the one member is OpenWOP's trace carrier.
            metadata: Some(serde_json::Map::from_iter([(
                "openwop".to_owned(),
                json!({"traceparent": caller.traceparent}),
            )])),
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        };
        let result = match a2a::send(peers, &peer, &caller, &remote, message).await {
            Ok(a2a::Sent::Task(task)) => json!({"task": task}),
            Ok(a2a::Sent::Message(message)) => json!({"message": message}),
            Err(e) => {
                self.close_carrier(&run.run_id, &node, json!({"failed": e.to_string()}))
                    .await;
                return Err(failed(
                    call_code(&e),
                    format!("SendMessage: {e}"),
                    "call-failed",
                ));
            }
        };
        self.close_carrier(
            &run.run_id,
            &node,
            json!({"negotiatedVersion": version, "result": result}),
        )
        .await;
        Ok(Invoked {
            negotiated_version: version,
            protocol: "a2a",
            run_id: projected,
            peer_digest: digest,
            result,
            rounds: None,
        })
    }

    /// One MCP exchange: `server/discover` under the preferred revision (a `-32022`
    /// answer's `data.supported` is the server's offer; an initialize-era server gets
    /// `initialize`), the decision, then `tools/call`, answering input rounds with
    /// `elicitationAnswer` (or declining them) up to `mrtr.maxRounds`.
    pub async fn seam_mcp_invoke(
        &self,
        subject: &Subject,
        req: McpInvoke,
    ) -> Result<Invoked, InvokeError> {
        let (run, node) = self.carrier(subject, req.traceparent.clone()).await?;
        let run_id = run.run_id.clone();
        let peers = self.engine.peers();
        let peer = peers.seam_peer(
            PeerKind::Mcp,
            &req.server_url,
            &subject.tenant,
            req.authenticated,
        );
        let caller = Caller::for_run(&run.run_id, &run.state);
        let digest = peers.peer_digest(&peer);
        let Some(ours) = peers.offer(Protocol::Mcp).cloned() else {
            return Err(
                OpError::internal("conformance seam: this host offers no MCP revision").into(),
            );
        };
        let mut offer = ours.clone();
        if let Some(asked) = &req.request_version {
            let decision =
                negotiation::decide(Protocol::Mcp, Some(asked), req.authenticated, &ours)
                    .with_peer(digest.clone());
            let narrowed = decision
                .version
                .as_deref()
                .and_then(|v| negotiation::Offer::new(Protocol::Mcp, &[v], v, v).ok());
            match narrowed {
                Some(narrowed) if decision.is_accepted() => offer = narrowed,
                _ => {
                    self.record_negotiation(&run_id, &node, &decision).await?;
                    return Err(self
                        .refused(&run_id, &node, &run_id, &decision, ours.offered())
                        .await);
                }
            }
        }
        let failed = |code: ErrorCode, message: String, reason: &str| InvokeError::Failed {
            code,
            message,
            details: json!({"protocol": "mcp", "runId": run_id, "reason": reason}),
        };
        let (session, decision) = match peers::mcp::connect_declaring(
            peers,
            &peer,
            &caller,
            &offer,
            // An object: the REST seam admits nothing else.
            req.client_capabilities
                .as_ref()
                .and_then(Value::as_object)
                .cloned(),
        )
        .await
        {
            Ok(c) => c,
            Err(e) => {
                self.close_carrier(&run_id, &node, json!({"failed": e.to_string()}))
                    .await;
                return Err(failed(
                    call_code(&e),
                    format!("server/discover: {e}"),
                    "unreachable",
                ));
            }
        };
        // The client decides as if authenticated; an unauthenticated exchange must not
        // land below preferred, so the decision is taken again with what the caller said.
        let decision = match decision.version.as_deref() {
            Some(v) if decision.is_accepted() => {
                negotiation::decide(Protocol::Mcp, Some(v), req.authenticated, &offer)
                    .with_peer(digest.clone())
            }
            _ => decision,
        };
        self.record_negotiation(&run_id, &node, &decision).await?;
        let (Some(mut session), Some(version)) = (session, decision.version.clone()) else {
            return Err(self
                .refused(&run_id, &node, &run_id, &decision, ours.offered())
                .await);
        };
        if !decision.is_accepted() {
            peers::mcp::close(peers, &peer, &caller, &session).await;
            return Err(self
                .refused(&run_id, &node, &run_id, &decision, ours.offered())
                .await);
        }
        // One request answered in place: a task would outlive the seam's answer.
        session.tasks = false;
        let max_rounds = peers.max_rounds();
        let mut rounds: u32 = 0;
        let mut answers: Option<peers::mcp::Round> = None;
        let outcome = loop {
            let called = peers::mcp::call_tool::<peers::mcp_wire::Verbatim>(
                peers,
                &peer,
                &caller,
                &session,
                &req.tool,
                &req.arguments,
                answers.take(),
            )
            .await;
            match called {
                // The seam answers the tool's result as the server sent it.
                Ok(peers::mcp::Called::Complete(result)) => break Ok(result.0),
                Ok(peers::mcp::Called::InputRequired {
                    input_requests,
                    request_state,
                }) => {
                    rounds += 1;
                    if rounds > max_rounds {
                        break Err(InvokeError::Failed {
                            code: ErrorCode::McpMrtrRoundsExceeded,
                            message: format!(
                                "the server asked for input more than mrtr.maxRounds ({max_rounds}) times"
                            ),
                            details: json!({"protocol": "mcp", "runId": run_id, "reason": "mcp-mrtr-rounds-exceeded"}),
                        });
                    }
                    // A question the declared capabilities do not offer to answer is
                    // the server's mistake: it ends the exchange unanswered.
                    if let Some(asked) = input_requests
                        .values()
                        .find_map(|r| unoffered(req.client_capabilities.as_ref(), r))
                    {
                        break Err(failed(
                            ErrorCode::McpError,
                            format!(
                                "the server asked for {asked}, which the declared clientCapabilities do not offer"
                            ),
                            "elicitation-not-offered",
                        ));
                    }
                    // The same answer for every input request of the round.
                    let reply = match &req.elicitation_answer {
                        Some(answer) => ElicitResult::new(ElicitationAction::Accept)
                            .with_content(answer.clone()),
                        None => ElicitResult::new(ElicitationAction::Decline),
                    };
                    let reply = serde_json::to_value(reply).unwrap_or_default();
                    let responses = input_requests
                        .keys()
                        .map(|k| (k.clone(), reply.clone()))
                        .collect();
                    answers = Some(peers::mcp::Round {
                        responses,
                        request_state,
                    });
                }
                Ok(peers::mcp::Called::Task(_)) => {
                    break Err(failed(
                        ErrorCode::PeerCallFailed,
                        "tools/call answered a task this seam did not ask for".into(),
                        "call-failed",
                    ));
                }
                Err(e) => {
                    break Err(failed(
                        call_code(&e),
                        format!("tools/call: {e}"),
                        "call-failed",
                    ));
                }
            }
        };
        peers::mcp::close(peers, &peer, &caller, &session).await;
        match outcome {
            Ok(result) => {
                self.close_carrier(
                    &run_id,
                    &node,
                    json!({"negotiatedVersion": version, "result": result, "rounds": rounds}),
                )
                .await;
                Ok(Invoked {
                    negotiated_version: version,
                    protocol: "mcp",
                    run_id,
                    peer_digest: digest,
                    result,
                    rounds: Some(rounds),
                })
            }
            Err(e) => {
                self.close_carrier(&run_id, &node, json!({"failed": true}))
                    .await;
                Err(e)
            }
        }
    }

    /// A new carrier run of the caller's and the node it waits at.
    async fn carrier(
        &self,
        subject: &Subject,
        trace: Option<String>,
    ) -> Result<(crate::store::RunRecord, String), OpError> {
        let request = run_request(crate::conformance::SEAM_CARRIER_ID, json!({}))?;
        let created = self
            .create_run_with(
                subject,
                request,
                Transport::Rest,
                None,
                CreateWith {
                    trace,
                    ..Default::default()
                },
            )
            .await?;
        let node = self.carrier_node(&created.run.run_id).await?;
        Ok((created.run, node))
    }

    /// The carrier run's open interrupt node, once the engine has raised it.
    async fn carrier_node(&self, run_id: &str) -> Result<String, OpError> {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            if let Some(open) = self.runs.open_interrupt(run_id).await? {
                return Ok(open.node_id);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(OpError::internal(
                    "conformance seam: the carrier run did not reach its interrupt",
                ));
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// Records `decision` on the host's log (under the run's tenant) and on the carrier
    /// run, as a calling node's negotiation is recorded.
    async fn record_negotiation(
        &self,
        run_id: &str,
        node: &str,
        decision: &Decision,
    ) -> Result<(), OpError> {
        let now = crate::clock::now_ms();
        let payload = decision.payload(&crate::clock::rfc3339(now));
        let tenant = run_id.split('/').next().unwrap_or_default().to_owned();
        self.runs
            .append_host_event(HostEventRecord::new(
                tenant,
                "negotiation.decided",
                "durable",
                payload.clone(),
                now,
            ))
            .await?;
        let adv = self
            .runs
            .advance(
                run_id,
                Guard::StatusNotIn(&crate::status::TERMINAL),
                RunPatch::default(),
                vec![NewEvent {
                    event_type: "negotiation.decided".into(),
                    node_id: Some(node.to_owned()),
                    payload,
                }],
            )
            .await?;
        self.engine.after_change(&adv);
        Ok(())
    }

    /// Completes the carrier run with the exchange's outcome (best effort: the answer to
    /// the suite does not depend on it).
    async fn close_carrier(&self, run_id: &str, node: &str, outcome: Value) {
        let Ok(Some(run)) = self.runs.get_run(run_id).await else {
            return;
        };
        if let Err(e) = self.resolve_loaded(&run, node, outcome).await {
            tracing::warn!(run_id, error = %e, "conformance seam: the carrier run did not close");
        }
    }

    /// The refusal answer: `interop_version_unsupported` with the decision's details; the
    /// carrier run is closed with it.
    async fn refused(
        &self,
        run_id: &str,
        node: &str,
        projected: &str,
        decision: &Decision,
        supported: Vec<&str>,
    ) -> InvokeError {
        let mut details = json!({
            "protocol": decision.protocol.as_str(),
            "runId": projected,
            "reason": decision.reason.as_str(),
            "requested": decision.requested,
        });
        // `supported` lists at least one version when present (the envelope's schema).
        if !supported.is_empty() {
            details["supported"] = json!(supported);
        }
        self.close_carrier(run_id, node, json!({"refused": details.clone()}))
            .await;
        InvokeError::Failed {
            code: ErrorCode::InteropVersionUnsupported,
            message: format!(
                "no {} version both sides accept{}",
                decision.protocol.as_str(),
                decision
                    .requested
                    .as_deref()
                    .map(|r| format!(" (requested {r}, floor {})", decision.floor))
                    .unwrap_or_default()
            ),
            details,
        }
    }
}

/// What an input request asks that `declared` (`None`: the host's own capabilities,
/// form-mode elicitation) does not offer, in words; `None` when it may be answered.
/// `elicitation: {}` offers form mode only, as MCP reads it.
fn unoffered(declared: Option<&Value>, request: &Value) -> Option<String> {
    let method = request.get("method").and_then(Value::as_str).unwrap_or("");
    if method != "elicitation/create" {
        return Some(format!("`{method}`"));
    }
    let mode = request
        .pointer("/params/mode")
        .and_then(Value::as_str)
        .unwrap_or("form");
    let Some(declared) = declared else {
        return (mode != "form").then(|| format!("{mode}-mode elicitation"));
    };
    let offered = match declared.get("elicitation").and_then(Value::as_object) {
        None => false,
        Some(e) if e.is_empty() => mode == "form",
        Some(e) => e.contains_key(mode),
    };
    (!offered).then(|| format!("{mode}-mode elicitation"))
}

/// The registered code a failed peer call answers with (as the call nodes fail).
fn call_code(e: &peers::CallError) -> ErrorCode {
    match e {
        peers::CallError::Refused(_) => ErrorCode::EgressDenied,
        peers::CallError::Transport(_) => ErrorCode::UpstreamUnavailable,
        _ => ErrorCode::PeerCallFailed,
    }
}
