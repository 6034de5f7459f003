//! Throwaway PostgreSQL schemas for tests: each test gets its own, so tests run in
//! parallel on one server and leave nothing behind. Not used by the host itself.

use super::StoreError;
use tokio_postgres::NoTls;

/// Where tests find PostgreSQL unless `OPENWOP_TEST_DATABASE_URL` says otherwise.
pub const DEFAULT_TEST_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The server tests use.
pub fn test_url() -> String {
    std::env::var("OPENWOP_TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_TEST_URL.to_owned())
}

/// True when `OPENWOP_SKIP_POSTGRES=1`: PostgreSQL tests then report a skip instead of
/// failing on an unreachable server.
pub fn skip_postgres(test: &str) -> bool {
    let skip = std::env::var("OPENWOP_SKIP_POSTGRES").is_ok_and(|v| v == "1");
    if skip {
        eprintln!("SKIPPED {test}: OPENWOP_SKIP_POSTGRES=1");
    }
    skip
}

/// A fresh schema, dropped (with everything in it) when this value drops.
pub struct ScratchSchema {
    pub base_url: String,
    pub schema: String,
}

impl ScratchSchema {
    /// Creates `openwop_test_<random>` on the test server; an unreachable server is an
    /// error, never a silent pass.
    pub async fn create() -> Result<Self, StoreError> {
        let base_url = test_url();
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes)
            .map_err(|e| StoreError::Database(format!("no randomness: {e}")))?;
        let schema = format!("openwop_test_{}", hex::encode(bytes));
        let (client, conn) = tokio_postgres::connect(&base_url, NoTls).await.map_err(|e| {
            StoreError::Database(format!("PostgreSQL at {base_url} is unreachable ({e}); set OPENWOP_SKIP_POSTGRES=1 to skip"))
        })?;
        let driver = tokio::spawn(conn);
        client
            .batch_execute(&format!("CREATE SCHEMA \"{schema}\""))
            .await?;
        drop(client);
        let _ = driver.await;
        Ok(Self { base_url, schema })
    }

    /// The test server's URL with this schema first on the search path.
    pub fn url(&self) -> String {
        let sep = if self.base_url.contains('?') {
            '&'
        } else {
            '?'
        };
        format!(
            "{}{sep}options=-csearch_path%3D{}",
            self.base_url, self.schema
        )
    }
}

impl Drop for ScratchSchema {
    fn drop(&mut self) {
        let (url, schema) = (self.base_url.clone(), self.schema.clone());
        // Drop runs inside the test's runtime, maybe while unwinding: use a thread of our own.
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                if let Ok((client, conn)) = tokio_postgres::connect(&url, NoTls).await {
                    tokio::spawn(conn);
                    if let Err(e) = client
                        .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                        .await
                    {
                        eprintln!("could not drop test schema {schema}: {e}");
                    }
                }
            });
        })
        .join();
    }
}
