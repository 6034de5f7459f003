//! The tenants every test host knows, and their API keys: one set for all the tests.

use openwop::host::HostConfig;
use openwop::identity::KeyRing;

pub const TENANT_A: &str = "acme";
pub const KEY_A: &str = "acme-key-0123456789abcdef";
pub const TENANT_B: &str = "other";
pub const KEY_B: &str = "other-key-0123456789abcdef";

/// Both tenants' keys.
pub fn key_ring() -> KeyRing {
    let mut keys = KeyRing::default();
    keys.add(TENANT_A, KEY_A).expect("key a");
    keys.add(TENANT_B, KEY_B).expect("key b");
    keys
}

/// A host configuration on `data_dir` with both tenants, otherwise the defaults.
pub fn config(data_dir: &std::path::Path) -> HostConfig {
    HostConfig::new(data_dir.to_path_buf(), key_ring())
}

/// The `--api-key` arguments of `openwop serve` for both tenants.
pub fn api_key_args() -> [String; 4] {
    [
        "--api-key".to_owned(),
        format!("{TENANT_A}:{KEY_A}"),
        "--api-key".to_owned(),
        format!("{TENANT_B}:{KEY_B}"),
    ]
}

/// The `apiKeys` line of a config file for both tenants.
pub fn api_keys_yaml() -> String {
    format!("apiKeys: [\"{TENANT_A}:{KEY_A}\", \"{TENANT_B}:{KEY_B}\"]\n")
}
