//! The settings of a run: the command line over a config file.
//!
//! The config file is `.openwop-validate.yaml` (or `.yml`), found in the working directory
//! or the nearest directory above it that has one (`--config FILE` names one,
//! `--no-config` ignores it), so a repository states its threshold and rule levels once
//! for every developer, hook and CI job:
//!
//! ```yaml
//! fail-on: error            # error | warning | never
//! max-warnings: 0           # fail when there are more warnings than this
//! baseline: .openwop-validate-baseline.json   # relative to this file
//! ignore: [public/vendor]   # files patterns match and that are not checked
//! rules:
//!   discovery.refresh-overdue: warning        # off | warning | error
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Deserialize;

use crate::rules::{self, Severity};

/// The config file's name.
pub const FILE_NAME: &str = ".openwop-validate.yaml";
/// Its other spelling: both are common for YAML, and a file under the one not looked for
/// would be ignored without a word.
pub const FILE_NAME_YML: &str = ".openwop-validate.yml";

/// Which findings fail the run (exit 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum FailOn {
    /// Any error-severity finding (the default).
    #[default]
    Error,
    /// Any finding, warnings included.
    Warning,
    /// No finding fails the run (`--max-warnings`, `--strict-baseline` and unreadable
    /// inputs still do).
    Never,
}

/// What a rule is set to: a severity, or off (its findings are not reported).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Off,
    On(Severity),
}

impl FromStr for Level {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" => Ok(Level::Off),
            "warning" => Ok(Level::On(Severity::Warning)),
            "error" => Ok(Level::On(Severity::Error)),
            _ => Err(format!(
                "\"{s}\" is not a level: write off, warning or error"
            )),
        }
    }
}

impl<'de> Deserialize<'de> for Level {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// `--max-warnings` / `max-warnings:`: a number of warnings, or `-1` for no limit (as
/// ESLint takes it), which also lifts a limit the config file sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxWarnings(pub Option<usize>);

impl FromStr for MaxWarnings {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "-1" => Ok(MaxWarnings(None)),
            n => n.parse().map(|n| MaxWarnings(Some(n))).map_err(|_| {
                format!("\"{s}\" is not a number of warnings: write 0 or more, or -1 for no limit")
            }),
        }
    }
}

fn max_warnings<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<MaxWarnings>, D::Error> {
    let n = i64::deserialize(d)?;
    n.to_string()
        .parse()
        .map(Some)
        .map_err(serde::de::Error::custom)
}

/// `ID=LEVEL` as `--rule` takes it.
pub fn parse_rule_setting(raw: &str) -> Result<(String, Level), String> {
    let Some((id, level)) = raw.split_once('=') else {
        return Err(format!(
            "\"{raw}\" is not ID=LEVEL, e.g. discovery.refresh-overdue=warning"
        ));
    };
    Ok((id.trim().to_owned(), level.trim().parse()?))
}

/// The config file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ConfigFile {
    pub fail_on: Option<FailOn>,
    #[serde(default, deserialize_with = "max_warnings")]
    pub max_warnings: Option<MaxWarnings>,
    pub baseline: Option<PathBuf>,
    pub docs_url: Option<String>,
    /// Patterns of files a quoted PATH pattern matches and that are not checked, relative
    /// to the config file's directory.
    #[serde(default)]
    pub ignore: Vec<String>,
    #[serde(default, deserialize_with = "rules_once_each")]
    pub rules: BTreeMap<String, Level>,
}

/// The `rules:` mapping, refusing a rule named twice: a map would keep the last silently,
/// and which of two levels a CI gate applies must not depend on the order of lines.
/// (Top-level keys named twice are refused by the struct's own deserializer.)
fn rules_once_each<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, Level>, D::Error> {
    struct Once;
    impl<'de> serde::de::Visitor<'de> for Once {
        type Value = BTreeMap<String, Level>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a mapping of rule ids to off, warning or error")
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            // `rules:` with nothing under it.
            Ok(BTreeMap::new())
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut rules = BTreeMap::new();
            while let Some((id, level)) = map.next_entry::<String, Level>()? {
                if rules.contains_key(&id) {
                    return Err(serde::de::Error::custom(format!(
                        "rule `{id}` is set twice under `rules`; keep one line"
                    )));
                }
                rules.insert(id, level);
            }
            Ok(rules)
        }
    }
    d.deserialize_any(Once)
}

/// A config file read from disk, with paths in it made relative to the working directory.
#[derive(Debug, Default)]
pub struct Config {
    /// Where it was read from; `None` when no config file applies.
    pub path: Option<PathBuf>,
    pub file: ConfigFile,
}

impl Config {
    /// Reads `explicit`, else the nearest `.openwop-validate.yaml` (or `.yml`) from `cwd`
    /// upwards.
    pub fn load(explicit: Option<&Path>, cwd: &Path) -> Result<Config, String> {
        let path = match explicit {
            Some(p) => Some(p.to_path_buf()),
            None => find(cwd)?,
        };
        let Some(path) = path else {
            return Ok(Config::default());
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read the config file {}: {e}", path.display()))?;
        let mut file: ConfigFile = if text.trim().is_empty() {
            ConfigFile::default()
        } else {
            yaml_serde::from_str(&text)
                .map_err(|e| format!("the config file {}: {e}", path.display()))?
        };
        if let Some(baseline) = &file.baseline
            && baseline.is_relative()
        {
            let dir = path.parent().unwrap_or(Path::new(""));
            file.baseline = Some(dir.join(baseline));
        }
        for id in file.rules.keys() {
            settable_rule(id).map_err(|e| format!("the config file {}: {e}", path.display()))?;
        }
        Ok(Config {
            path: Some(path),
            file,
        })
    }
}

/// The nearest config file in `dir` or a directory above it, under either name. A
/// directory with both is an error: which one applies must not be a guess.
fn find(dir: &Path) -> Result<Option<PathBuf>, String> {
    for d in dir.ancestors() {
        let (yaml, yml) = (d.join(FILE_NAME), d.join(FILE_NAME_YML));
        match (yaml.is_file(), yml.is_file()) {
            (true, true) => {
                return Err(format!(
                    "two config files: {} and {}; keep one",
                    yaml.display(),
                    yml.display()
                ));
            }
            (true, false) => return Ok(Some(yaml)),
            (false, true) => return Ok(Some(yml)),
            (false, false) => {}
        }
    }
    Ok(None)
}

/// An error naming the rule when `id` is not in the catalogue, so a typo does not silently
/// leave a rule at its default.
pub fn known_rule(id: &str) -> Result<(), String> {
    if rules::lookup(id).is_some() {
        Ok(())
    } else {
        Err(format!("no rule \"{id}\" (`--list-rules` lists them all)"))
    }
}

/// A rule whose level can be set: a known one, and not one about an input that could not
/// be checked (such an input always fails the run: nothing in it was checked).
pub fn settable_rule(id: &str) -> Result<(), String> {
    known_rule(id)?;
    if rules::is_input(id) {
        return Err(format!(
            "\"{id}\" cannot be set: a document that cannot be read or parsed always fails the run (exit 2), since nothing in it was checked"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_and_rule_settings_parse() {
        assert_eq!(
            parse_rule_setting("schema=warning"),
            Ok(("schema".into(), Level::On(Severity::Warning)))
        );
        assert_eq!(
            parse_rule_setting(" schema = off "),
            Ok(("schema".into(), Level::Off))
        );
        assert!(parse_rule_setting("schema").is_err());
        assert!(parse_rule_setting("schema=loud").is_err());
    }

    #[test]
    fn the_nearest_file_upwards_is_read_and_its_baseline_is_relative_to_it() {
        let root = tempfile::tempdir().expect("dir");
        let deep = root.path().join("a/b");
        std::fs::create_dir_all(&deep).expect("mkdir");
        assert!(
            Config::load(None, &deep)
                .expect("no file is fine")
                .path
                .is_none()
        );
        std::fs::write(
            root.path().join(FILE_NAME),
            "fail-on: warning\nmax-warnings: 3\nbaseline: base.json\nrules:\n  schema: off\n",
        )
        .expect("write");
        let config = Config::load(None, &deep).expect("read");
        assert_eq!(config.path, Some(root.path().join(FILE_NAME)));
        assert_eq!(config.file.fail_on, Some(FailOn::Warning));
        assert_eq!(config.file.max_warnings, Some(MaxWarnings(Some(3))));
        assert_eq!(config.file.baseline, Some(root.path().join("base.json")));
        assert_eq!(config.file.rules.get("schema"), Some(&Level::Off));
    }

    #[test]
    fn mistakes_in_the_file_are_named() {
        let root = tempfile::tempdir().expect("dir");
        let path = root.path().join("c.yaml");
        for (text, says) in [
            ("fail-on: sometimes\n", "fail-on"),
            ("failon: error\n", "failon"),
            ("rules:\n  no.such-rule: off\n", "no.such-rule"),
            ("rules:\n  schema: loud\n", "loud"),
            (
                "rules:\n  schema: off\n  schema: error\n",
                "rule `schema` is set twice",
            ),
            (
                "fail-on: error\nfail-on: never\n",
                "duplicate field `fail-on`",
            ),
            ("rules: [\n", "the config file"),
        ] {
            std::fs::write(&path, text).expect("write");
            let err = Config::load(Some(&path), root.path())
                .err()
                .unwrap_or_default();
            assert!(err.contains(says), "{text:?}: {err}");
        }
    }

    #[test]
    fn the_yml_spelling_is_read_and_both_in_one_directory_are_refused() {
        let root = tempfile::tempdir().expect("dir");
        std::fs::write(root.path().join(FILE_NAME_YML), "fail-on: never\n").expect("write");
        let config = Config::load(None, root.path()).expect("read");
        assert_eq!(config.path, Some(root.path().join(FILE_NAME_YML)));
        assert_eq!(config.file.fail_on, Some(FailOn::Never));
        std::fs::write(root.path().join(FILE_NAME), "fail-on: warning\n").expect("write");
        let err = Config::load(None, root.path()).err().unwrap_or_default();
        assert!(
            err.contains(FILE_NAME) && err.contains(FILE_NAME_YML),
            "{err}"
        );
    }
}
