//! `getArtifact`: an artifact a node of the run recorded (`crate::engine::artifacts`).

use super::{OpError, Ops};
use crate::engine::artifacts::{self, Recorded};
use crate::identity::Subject;
use crate::ids::BoundId;

impl Ops {
    /// The artifact `artifact_id` of the run `id`. A run the caller cannot read (another
    /// tenant's, or none) and an artifact the run does not have give one error, so the
    /// answer never says which of the three it was.
    pub async fn get_artifact(
        &self,
        subject: &Subject,
        id: &BoundId,
        artifact_id: &str,
    ) -> Result<(String, Recorded), OpError> {
        let run = match self.load(subject, id).await {
            Ok(run) => run,
            Err(e) if e.unreadable_run().is_some() => return Err(OpError::ArtifactNotFound),
            Err(e) => return Err(e),
        };
        let recorded = artifacts::find(&run.state, artifact_id).ok_or(OpError::ArtifactNotFound)?;
        Ok((run.run_id, recorded))
    }
}
