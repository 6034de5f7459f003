//! Reading a PATH argument: a file, `-` for standard input, or an `http(s)://` URL.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use ureq::http::{self, Uri};
use ureq::tls::{Certificate, RootCerts};

use crate::Kind;
use crate::position::position_at;

/// Why a document could not be read; the message says where.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {label}: {source}")]
    Io {
        label: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{label}:{line}:{column}: {reason}")]
    Json {
        label: String,
        line: usize,
        column: usize,
        /// The whole sentence: `not valid JSON: …`, or why JSON that may well be valid was
        /// not read (it nests deeper than [`MAX_DEPTH`]).
        reason: String,
    },
    #[error("cannot fetch {url}: {reason}")]
    Http { url: String, reason: String },
    /// A PATH that names no document: a directory, or a pattern nothing matches.
    #[error("{label}: {reason}")]
    Nothing { label: String, reason: String },
}

impl LoadError {
    /// How findings name the input: the argument, `<stdin>`, or the URL.
    pub fn label(&self) -> &str {
        match self {
            LoadError::Io { label, .. }
            | LoadError::Json { label, .. }
            | LoadError::Nothing { label, .. } => label,
            LoadError::Http { url, .. } => url,
        }
    }

    /// The message without the input's name, for a finding that names it already.
    pub fn reason(&self) -> String {
        match self {
            LoadError::Io { source, .. } => format!("cannot read the file: {source}"),
            LoadError::Json { reason, .. } => reason.clone(),
            LoadError::Http { reason, .. } => format!("cannot fetch it: {reason}"),
            LoadError::Nothing { reason, .. } => reason.clone(),
        }
    }
}

/// A document read from a PATH argument.
#[derive(Debug)]
pub struct Loaded {
    /// How findings name the document: the argument as given, `<stdin>` for `-`, or the
    /// URL actually fetched.
    pub label: String,
    /// The text read, to place findings on lines and columns.
    pub text: String,
    pub value: Value,
}

/// How long a URL may take to answer, so a CI step never hangs on a dead host.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// The header every OpenWOP v2 request carries.
const VERSION_HEADER: (&str, &str) = ("OpenWOP-Version", "2.0");

/// The A2A version an agent card is asked for.
const A2A_VERSION_HEADER: (&str, &str) = ("A2A-Version", "1.0");

/// How findings name standard input unless `--stdin-filename` names it.
pub const STDIN_LABEL: &str = "<stdin>";

/// Reads and parses one PATH argument.
pub fn load(arg: &str, kind: Kind) -> Result<Loaded, LoadError> {
    load_named(arg, kind, STDIN_LABEL)
}

/// As [`load`], naming standard input `stdin_label` (the file a pre-commit hook or an
/// editor piped in), so its findings, baseline entries and SARIF locations name that file.
pub fn load_named(arg: &str, kind: Kind, stdin_label: &str) -> Result<Loaded, LoadError> {
    if arg == "-" {
        let label = stdin_label.to_owned();
        let text = read_capped(std::io::stdin().lock(), &label)?;
        return parse(label, &text);
    }
    if is_url(arg) {
        return fetch(arg, kind);
    }
    if Path::new(arg).is_dir() {
        return Err(LoadError::Nothing {
            label: arg.to_owned(),
            reason: format!(
                "is a directory; name its documents, or a quoted pattern such as '{}/**/*.json'",
                arg.trim_end_matches('/')
            ),
        });
    }
    // Named as every other mention of the file is (`./a.json`, `$PWD/a.json` are `a.json`).
    let label = path_key(arg);
    let io = |source| LoadError::Io {
        label: label.clone(),
        source,
    };
    // Looked at before it is opened: opening a FIFO waits for a writer, and a device
    // (`/dev/zero`) never ends.
    let meta = std::fs::metadata(&label).map_err(io)?;
    if !meta.is_file() {
        return Err(LoadError::Nothing {
            label: label.clone(),
            reason: "is not a regular file (a FIFO, a device or a socket), so it was not read; name a file, or pipe what it gives to `-`".to_owned(),
        });
    }
    let file = std::fs::File::open(&label).map_err(io)?;
    let text = read_capped(file, &label)?;
    parse(label, &text)
}

/// The most this tool reads of one document, from a file, standard input or a URL; a
/// discovery document or an agent card is a few kilobytes.
pub const MAX_BYTES: u64 = 10 * 1024 * 1024;

/// Why a document larger than [`MAX_BYTES`] was not read.
fn too_large(label: &str) -> LoadError {
    LoadError::Nothing {
        label: label.to_owned(),
        reason: format!(
            "is larger than {} MiB, the most this tool reads of one document (a discovery document or an agent card is a few kilobytes), so it was not checked",
            MAX_BYTES / (1024 * 1024)
        ),
    }
}

/// Reads at most [`MAX_BYTES`] from `from`: one byte more says it is larger.
fn read_capped(from: impl Read, label: &str) -> Result<Vec<u8>, LoadError> {
    let mut text = Vec::new();
    from.take(MAX_BYTES + 1)
        .read_to_end(&mut text)
        .map_err(|source| LoadError::Io {
            label: label.to_owned(),
            source,
        })?;
    if text.len() as u64 > MAX_BYTES {
        return Err(too_large(label));
    }
    Ok(text)
}

/// The PATH arguments with quoted patterns expanded: an argument with `*`, `?` or `[`
/// that names no file is a glob (`**` crosses directories), replaced by the files it
/// matches, sorted. The shell's own expansion differs (bash's `**` needs `globstar`, and
/// an unmatched pattern stays literal), so CI files should quote patterns and let this do
/// it. A pattern that matches nothing is an input that could not be checked, never a
/// silent pass, and so is each entry it meets and cannot check: a directory it cannot
/// read, a match whose path is not UTF-8 or that cannot be looked at (a broken symbolic
/// link). Paths come out as [`path_key`] writes them, and a file named twice (`x.json`,
/// `./x.json`, `$PWD/x.json`) is checked once.
pub fn expand(args: &[String]) -> Vec<Result<String, LoadError>> {
    expand_ignoring(args, &Ignore::default())
}

/// Directories a pattern's walk never enters unless the pattern names them in its literal
/// part: a repository's own history, and installed packages.
pub const SKIPPED_DIRS: [&str; 2] = [".git", "node_modules"];

/// `--ignore` patterns and the config file's `ignore:`: files a quoted pattern matches and
/// that are not checked. Each is a glob (`*`, `?`, `[…]` within a path component, `**`
/// across them) matched against a file's path relative to the directory the pattern is
/// relative to (the working directory for `--ignore`, the config file's for `ignore:`),
/// and against each directory above it, so `vendor` and `public/vendor` leave out
/// everything under that directory.
#[derive(Debug, Default)]
pub struct Ignore {
    patterns: Vec<(glob::Pattern, String)>,
}

impl Ignore {
    /// Adds `pattern`, relative to the absolute directory `base`.
    pub fn add(&mut self, pattern: &str, base: &Path) -> Result<(), String> {
        let trimmed = pattern.trim_end_matches('/');
        let trimmed = trimmed.strip_prefix("./").unwrap_or(trimmed);
        let glob = glob::Pattern::new(trimmed)
            .map_err(|e| format!("\"{pattern}\" is not a valid pattern: {e}"))?;
        let base = absolute_lexically(Path::new("/"), &base.to_string_lossy());
        self.patterns.push((glob, base));
        Ok(())
    }

    /// Whether the file at `path` (as [`path_key`] writes it) is ignored.
    pub fn ignores(&self, path: &str) -> bool {
        if self.patterns.is_empty() {
            return false;
        }
        let Some(cwd) = std::env::current_dir().ok() else {
            return false;
        };
        let absolute = absolute_lexically(&cwd, path);
        let options = glob::MatchOptions {
            case_sensitive: true,
            require_literal_separator: true,
            require_literal_leading_dot: false,
        };
        self.patterns.iter().any(|(glob, base)| {
            let relative = if glob.as_str().starts_with('/') {
                None
            } else if base == "/" {
                absolute.strip_prefix('/')
            } else {
                absolute
                    .strip_prefix(base.as_str())
                    .and_then(|rest| rest.strip_prefix('/'))
            };
            let Some(path) = relative.or(glob.as_str().starts_with('/').then_some(&absolute[..]))
            else {
                return false;
            };
            // The file, and each directory above it.
            path.match_indices('/')
                .map(|(i, _)| &path[..i])
                .chain(std::iter::once(path))
                .any(|p| !p.is_empty() && glob.matches_with(p, options))
        })
    }
}

/// [`expand`], leaving out the matches of quoted patterns that `ignore` ignores. A file
/// named as it is is always checked.
pub fn expand_ignoring(args: &[String], ignore: &Ignore) -> Vec<Result<String, LoadError>> {
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut push = |out: &mut Vec<Result<String, LoadError>>, path: &str| {
        let path = if path == "-" || is_url(path) {
            path.to_owned()
        } else {
            path_key(path)
        };
        if seen.insert(path.clone()) {
            out.push(Ok(path));
        }
    };
    for arg in args {
        let missing = arg != "-" && !is_url(arg) && !Path::new(arg).exists();
        if missing && has_braces(arg) {
            // A shell's `{a,c}`, quoted: the glob syntax here has no braces, and "cannot
            // read the file" would not say why.
            out.push(Err(LoadError::Nothing {
                label: arg.clone(),
                reason: "braces (`{a,c}`) are not expanded here: leave them unquoted for the shell to expand, or name each file".to_owned(),
            }));
            continue;
        }
        let pattern = arg.contains(['*', '?', '[']) && missing;
        if !pattern {
            push(&mut out, arg);
            continue;
        }
        let matched = match glob::Pattern::new(arg) {
            Ok(pattern) => matches(arg, &pattern),
            Err(e) => {
                out.push(Err(LoadError::Nothing {
                    label: arg.clone(),
                    reason: format!("not a valid pattern: {e}"),
                }));
                continue;
            }
        };
        if matched.is_empty() {
            out.push(Err(LoadError::Nothing {
                label: arg.clone(),
                reason: "no file matches this pattern".to_owned(),
            }));
        }
        let found = matched.len();
        let matched: Vec<_> = matched
            .into_iter()
            .filter(|(_, m)| !m.as_ref().is_ok_and(|file| ignore.ignores(file)))
            .collect();
        if found > 0 && matched.is_empty() {
            // A gate that checks nothing must not pass without a word.
            out.push(Err(LoadError::Nothing {
                label: arg.clone(),
                reason: "every file this pattern matches is ignored (--ignore, or `ignore:` in the config file)".to_owned(),
            }));
        }
        for (_, checked) in matched {
            match checked {
                Ok(file) => push(&mut out, &file),
                Err(e) => out.push(Err(e)),
            }
        }
    }
    out
}

/// Whether `arg` holds a shell brace expansion, `{a,c}` (a `{` with a `,` before the `}`
/// that closes it).
fn has_braces(arg: &str) -> bool {
    arg.split('{').skip(1).any(|rest| {
        rest.split_once('}')
            .is_some_and(|(inside, _)| inside.contains(','))
    })
}

/// The files `pattern` (the argument `arg`) matches, sorted by path, and each entry it
/// meets and cannot check, as an error in its place.
///
/// The directories are walked here rather than by `glob::glob`, which leaves out a name
/// that is not UTF-8 and says nothing. The walk starts at the pattern's literal directory
/// (`docs` for `docs/**/*.json`, the working directory for `*.json`) and goes as deep as
/// the pattern's components reach (any depth under `**`); each file's path, as the pattern
/// writes it, is matched with `*`, `?` and `[…]` stopping at `/` and `**` crossing it, as
/// `glob::glob` matches. Matched directories are not documents and are left out.
fn matches(arg: &str, pattern: &glob::Pattern) -> Vec<(PathBuf, Result<String, LoadError>)> {
    let options = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    // The literal directory: up to the separator before the first component with a
    // wildcard (`None`: the working directory; `""`: the root).
    let first_wild = arg.find(['*', '?', '[']).unwrap_or(arg.len());
    let split = arg[..first_wild].rfind(std::path::is_separator);
    let (base, rest) = match split {
        Some(i) => (Some(&arg[..i]), &arg[i + 1..]),
        None => (None, arg),
    };
    let depth = if rest.split(std::path::is_separator).any(|c| c == "**") {
        usize::MAX
    } else {
        rest.split(std::path::is_separator).count()
    };
    let start = match base {
        None => PathBuf::from("."),
        Some("") => PathBuf::from("/"),
        Some(dir) => PathBuf::from(dir),
    };
    let mut found = Vec::new();
    if !start.is_dir() {
        return found;
    }
    // Each directory is read once, however many symbolic links lead to it: a link to a
    // directory above it would otherwise be walked round and round.
    let mut visited = std::collections::HashSet::new();
    visited.insert(std::fs::canonicalize(&start).unwrap_or_else(|_| start.clone()));
    // Directories to read: the real path, the path as the pattern writes it, and the level
    // of its entries (1: the components right after the literal directory).
    let mut todo = vec![(start, base.map(str::to_owned), 1)];
    while let Some((dir, written, level)) = todo.pop() {
        let unreadable = |path: &Path, label: &str, reason: String| {
            (
                path.to_path_buf(),
                Err(LoadError::Nothing {
                    label: path_key(label),
                    reason,
                }),
            )
        };
        let label = written.clone().unwrap_or_else(|| ".".to_owned());
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) => {
                let why = format!("cannot read this directory to expand `{arg}`: {e}");
                found.push(unreadable(&dir, &label, why));
                continue;
            }
        };
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    let why = format!("cannot read this directory to expand `{arg}`: {e}");
                    found.push(unreadable(&dir, &label, why));
                    continue;
                }
            };
            let name = entry.file_name();
            let path = dir.join(&name);
            let shown = match &written {
                Some(dir) => format!("{dir}/{}", name.to_string_lossy()),
                None => name.to_string_lossy().into_owned(),
            };
            // Followed through symbolic links, as glob does.
            let meta = std::fs::metadata(&path);
            if meta.as_ref().is_ok_and(std::fs::Metadata::is_dir) {
                if SKIPPED_DIRS.iter().any(|skipped| name == *skipped) {
                    continue;
                }
                let canonical = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
                if level < depth && visited.insert(canonical) {
                    todo.push((path, Some(shown), level + 1));
                }
                continue;
            }
            if !pattern.matches_with(&shown, options) {
                continue;
            }
            // The whole path: a directory on the way can have such a name too.
            found.push(match (meta, path.to_str()) {
                (Err(e), _) => unreadable(
                    &path,
                    &shown,
                    format!("matches `{arg}` but cannot be read: {e}"),
                ),
                (Ok(_), None) => unreadable(
                    &path,
                    &shown,
                    format!(
                        "matches `{arg}` but its path is not UTF-8, which findings and baselines cannot name; rename it"
                    ),
                ),
                (Ok(_), Some(_)) => (path, Ok(shown)),
            });
        }
    }
    found.sort_by(|(a, _), (b, _)| a.cmp(b));
    found
}

/// A file path written one way, however the argument wrote it, relative to the working
/// directory: how findings name the file, what keys its baseline entries, and what
/// finds it named twice. See [`normalize`].
pub fn path_key(path: &str) -> String {
    let cwd = std::env::current_dir().ok();
    let key = normalize(path, cwd.as_deref());
    // `current_dir` is the resolved directory, but a shell keeps the symbolic link it was
    // entered by in `$PWD`, and scripts write `"$PWD/docs/a.json"`: relative to that too.
    match (cwd, shell_pwd()) {
        (Some(cwd), Some((resolved, pwd))) if key.starts_with('/') && cwd == *resolved => {
            normalize(&key, Some(pwd))
        }
        _ => key,
    }
}

/// The working directory as resolved, and `$PWD` when it names that directory by another
/// path (through a symbolic link); `None` when `$PWD` is unset, relative, the same path, or
/// another directory (a stale `$PWD` after a `chdir`). Read once: every path of a run is
/// keyed, and each check resolves both paths; the pair says which working directory it
/// holds for.
fn shell_pwd() -> Option<&'static (PathBuf, PathBuf)> {
    static PWD: std::sync::OnceLock<Option<(PathBuf, PathBuf)>> = std::sync::OnceLock::new();
    PWD.get_or_init(|| {
        let cwd = std::env::current_dir().ok()?;
        let pwd = PathBuf::from(std::env::var_os("PWD")?);
        if !pwd.is_absolute() || pwd == cwd {
            return None;
        }
        let same = std::fs::canonicalize(&pwd).ok()? == std::fs::canonicalize(&cwd).ok()?;
        same.then_some((cwd, pwd))
    })
    .as_ref()
}

/// `path` written one way: without `.` segments and repeated `/` (`./bl/a.json`,
/// `bl//a.json` and `bl/./a.json` are `bl/a.json`), and, when it is absolute and under
/// `cwd`, relative to `cwd` (`$PWD/bl/a.json` is `bl/a.json`). Lexical only: `..` stays
/// (`a/../b` is not `b` when `a` is a symbolic link), and so does an absolute path whose
/// rest after `cwd` climbs out of it with `..`. A URL or `-` is returned as it is.
pub fn normalize(path: &str, cwd: Option<&Path>) -> String {
    if path == "-" || is_url(path) {
        return path.to_owned();
    }
    // A leading `//` (not `///`) is kept: POSIX leaves its meaning to the system, and on
    // Windows it starts a network path.
    let root = if path.starts_with("//") && !path.starts_with("///") {
        "//"
    } else if path.starts_with('/') {
        "/"
    } else {
        ""
    };
    let parts: Vec<&str> = path
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    if root == "/"
        && let Some(cwd) = cwd.and_then(Path::to_str)
    {
        // Under `/`, every path would lose its root: it reads better kept whole.
        let base: Vec<&str> = cwd.split('/').filter(|p| !p.is_empty()).collect();
        if let Some(rest) = parts.strip_prefix(base.as_slice())
            && !base.is_empty()
            && !rest.is_empty()
            && !rest.contains(&"..")
        {
            return rest.join("/");
        }
    }
    let joined = parts.join("/");
    if root.is_empty() && joined.is_empty() {
        // `.` or `./`: a directory, named as given in the message that says so.
        return path.to_owned();
    }
    format!("{root}{joined}")
}

/// The repository root that GitHub annotations and SARIF name files relative to: code
/// scanning and the runner read a path there against the repository, not against the
/// directory the command ran in (a monorepo job's `working-directory:`). It is
/// `GITHUB_WORKSPACE` when set, else the nearest directory at or above the working
/// directory that holds `.git` (a directory, or a file in a worktree or submodule), else
/// the working directory. The human format keeps paths as they were typed.
#[derive(Debug, Clone)]
pub struct Root {
    /// The root, absolute and lexically normal (`None` without a working directory).
    dir: Option<String>,
    /// The same directory with symbolic links resolved, when that differs: the working
    /// directory is resolved, `GITHUB_WORKSPACE` may not be.
    resolved: Option<String>,
    cwd: Option<PathBuf>,
}

impl Root {
    /// The root of this run, from the environment and the working directory.
    pub fn find() -> Root {
        let workspace = std::env::var_os("GITHUB_WORKSPACE")
            .filter(|w| !w.is_empty())
            .map(PathBuf::from);
        Root::at(workspace, std::env::current_dir().ok())
    }

    /// The root for `workspace` (`GITHUB_WORKSPACE`) and the working directory `cwd`.
    pub fn at(workspace: Option<PathBuf>, cwd: Option<PathBuf>) -> Root {
        let dir = match (&workspace, &cwd) {
            (Some(w), Some(cwd)) => Some(cwd.join(w)),
            (Some(w), None) if w.is_absolute() => Some(w.clone()),
            (_, Some(cwd)) => Some(
                cwd.ancestors()
                    .find(|d| d.join(".git").exists())
                    .unwrap_or(cwd)
                    .to_path_buf(),
            ),
            _ => None,
        };
        let lexical = |d: &Path| d.to_str().map(|d| absolute_lexically(Path::new("/"), d));
        let resolved = dir
            .as_deref()
            .and_then(|d| std::fs::canonicalize(d).ok())
            .as_deref()
            .and_then(lexical);
        let dir = dir.as_deref().and_then(lexical);
        Root {
            resolved: resolved.filter(|r| Some(r) != dir.as_ref()),
            dir,
            cwd,
        }
    }

    /// The root directory, absolute, as a `file://` URI ending in `/` (for SARIF's
    /// `originalUriBaseIds`).
    pub fn uri(&self) -> Option<String> {
        let dir = self.dir.as_deref()?;
        let mut uri = format!("file://{}", percent_encode(dir));
        if !uri.ends_with('/') {
            uri.push('/');
        }
        Some(uri)
    }

    /// A document's path (as findings name it) relative to the root, when it is under it;
    /// `None` for a file outside it, a URL or standard input.
    pub fn relative(&self, path: &str) -> Option<String> {
        if is_no_file(path) {
            return None;
        }
        let absolute = self.absolute(path)?;
        [self.dir.as_deref(), self.resolved.as_deref()]
            .into_iter()
            .flatten()
            .find_map(|root| {
                let rest = absolute.strip_prefix(root)?;
                let rest = if root == "/" {
                    rest
                } else {
                    rest.strip_prefix('/')?
                };
                (!rest.is_empty()).then(|| rest.to_owned())
            })
    }

    /// A file's path made absolute against the working directory, lexically.
    pub fn absolute(&self, path: &str) -> Option<String> {
        let cwd = self.cwd.as_deref()?.to_str()?;
        Some(absolute_lexically(Path::new(cwd), path))
    }

    /// A document's path as the CI formats name it (GitHub annotations, JUnit, the markdown
    /// table a job summary shows): relative to the root when under it, else as findings
    /// name it.
    pub fn repo_path(&self, path: &str) -> String {
        self.relative(path).unwrap_or_else(|| path.to_owned())
    }
}

/// `path` resolved against the absolute directory `base`, lexically (`.`, `..` and
/// repeated `/` resolved, symbolic links not).
pub fn absolute_lexically(base: &Path, path: &str) -> String {
    let joined = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("{}/{path}", base.display())
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    format!("/{}", parts.join("/"))
}

/// `path` with the characters a URI path cannot hold percent-encoded.
pub fn percent_encode(path: &str) -> String {
    let mut out = String::new();
    for b in path.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Whether a document's path names no file: standard input (`-`, or `<stdin>` as findings
/// name it) or a URL. Such a path is kept as it is, never resolved against a directory.
pub fn is_no_file(path: &str) -> bool {
    path == "-" || path == STDIN_LABEL || is_url(path)
}

/// Whether a PATH argument is an `http(s)://` URL (fetched, not read).
pub fn is_url(arg: &str) -> bool {
    let lower = arg.get(..8).unwrap_or(arg).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// How deep arrays and objects may nest: serde_json's recursion limit, which keeps a
/// hostile document from overflowing the stack. (Its counter starts at 128 and fails when
/// it reaches 0, so the 128th level is the first it refuses.)
pub const MAX_DEPTH: usize = 127;

/// Parses JSON, naming the line and column of the first error. A UTF-8 byte order mark is
/// skipped (RFC 8259 lets a parser ignore one; editors on Windows write it), so positions
/// count from the first character after it, as an editor shows them.
pub fn parse(label: String, text: &[u8]) -> Result<Loaded, LoadError> {
    let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
    if let Some((offset, reason)) = not_utf8_json(text) {
        let at = position_at(text, offset);
        return Err(LoadError::Json {
            label,
            line: at.line,
            column: at.column,
            reason,
        });
    }
    match serde_json::from_slice(text) {
        // JSON that parsed is UTF-8 (serde_json checks strings; anything else outside
        // them is a syntax error), so the lossy conversion never replaces anything.
        Ok(value) => Ok(Loaded {
            label,
            text: String::from_utf8_lossy(text).into_owned(),
            value,
        }),
        Err(e) => {
            let offset = error_offset(text, e.line(), e.column());
            let (offset, reason) =
                unreadable_json(text, offset, &e).unwrap_or_else(|| (offset, error_reason(&e)));
            let at = position_at(text, offset);
            Err(LoadError::Json {
                label,
                line: at.line,
                column: at.column,
                reason,
            })
        }
    }
}

/// Why `text` (after any UTF-8 byte order mark) cannot be JSON before a parser looks at
/// it, and where: it is empty, or in another encoding than UTF-8 (RFC 8259 section 8.1:
/// JSON exchanged between systems is UTF-8), which serde_json would call "EOF while
/// parsing a value", "expected value" or "invalid unicode code point". UTF-16 and UTF-32
/// are told by their byte order mark, else by the zero bytes around the first character
/// (RFC 4627 section 3's detection: JSON starts with ASCII); any other byte that is not
/// UTF-8 (a Latin-1 `é`) is named with its place.
fn not_utf8_json(text: &[u8]) -> Option<(usize, String)> {
    if text
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        return Some((
            0,
            if text.is_empty() {
                "the document is empty, where a JSON value was expected".to_owned()
            } else {
                "the document holds only whitespace, where a JSON value was expected".to_owned()
            },
        ));
    }
    let bom = |bytes: &[u8]| {
        bytes
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let encoding = match text {
        [0xFF, 0xFE, 0, 0, ..] => Some(("UTF-32", "little", Some(&text[..4]))),
        [0, 0, 0xFE, 0xFF, ..] => Some(("UTF-32", "big", Some(&text[..4]))),
        [0xFF, 0xFE, ..] => Some(("UTF-16", "little", Some(&text[..2]))),
        [0xFE, 0xFF, ..] => Some(("UTF-16", "big", Some(&text[..2]))),
        [0, 0, 0, a, ..] if *a != 0 => Some(("UTF-32", "big", None)),
        [a, 0, 0, 0, ..] if *a != 0 => Some(("UTF-32", "little", None)),
        [0, a, ..] if *a != 0 => Some(("UTF-16", "big", None)),
        [a, 0, ..] if *a != 0 => Some(("UTF-16", "little", None)),
        _ => None,
    };
    if let Some((name, endian, mark)) = encoding {
        let how = match mark {
            Some(mark) => format!("{endian}-endian, byte order mark {}", bom(mark)),
            None => format!("{endian}-endian, no byte order mark"),
        };
        return Some((
            0,
            format!(
                "the document is {name} ({how}), not UTF-8, so it was not checked: save it as UTF-8 (JSON is UTF-8, RFC 8259 section 8.1; PowerShell's `>` writes UTF-16: use `Out-File -Encoding utf8`)"
            ),
        ));
    }
    let e = std::str::from_utf8(text).err()?;
    let at = e.valid_up_to();
    Some((
        at,
        format!(
            "byte 0x{:02X} is not UTF-8, so the document was not checked: save it as UTF-8 (JSON is UTF-8, RFC 8259 section 8.1; this is often a Latin-1 or Windows-1252 file)",
            text[at]
        ),
    ))
}

/// JSON that RFC 8259's grammar allows and this tool does not read, where serde_json
/// stopped at `offset`: where it starts and what to say. Two kinds, both refused (an
/// `input.malformed` finding: the document is not checked, exit 2), as serde_json refuses
/// them, and so does every reader built on it, the host and its SDK among them:
///
/// - a number beyond the range of a 64-bit float, such as `1e999` (RFC 8259 section 6
///   lets a reader limit the range, and says numbers beyond IEEE 754 doubles are not
///   interoperable; a reader that takes it reads infinity, or another number);
/// - a string with a lone UTF-16 surrogate escape, such as `"\ud800"`: no Unicode text
///   (RFC 8259 section 8.2: what a reader does with it is unpredictable; some refuse it,
///   some replace it with U+FFFD, some keep it).
///
/// The finding is at the number's first character or the escape's backslash, not where
/// serde_json noticed (after the number; after the escape, at what should have been the
/// pair's other half), and says which it is, not "not valid JSON". `None` for any other
/// error.
fn unreadable_json(text: &[u8], offset: usize, e: &serde_json::Error) -> Option<(usize, String)> {
    if let Some(escape) = lone_surrogate(text, offset) {
        let written = String::from_utf8_lossy(&text[escape..escape + 6]);
        return Some((
            escape,
            format!(
                "the escape `{written}` is half of a UTF-16 surrogate pair without the other half, so this string is no Unicode text and the document was not checked: JSON's grammar allows it, but readers treat it differently (RFC 8259 section 8.2; this one refuses it, others replace it or keep it); write the character itself, or escape both halves of its pair"
            ),
        ));
    }
    // serde_json has no error code to match; its message is all there is.
    if !e.to_string().starts_with("number out of range") {
        return None;
    }
    let number = |b: &u8| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E');
    let at = offset.min(text.len().checked_sub(1)?);
    if !number(&text[at]) {
        return None;
    }
    let start = text[..at]
        .iter()
        .rposition(|b| !number(b))
        .map_or(0, |i| i + 1);
    let end = text[at..]
        .iter()
        .position(|b| !number(b))
        .map_or(text.len(), |i| at + i);
    let token = std::str::from_utf8(&text[start..end]).ok()?;
    // A number too large for a double, and only that.
    if token.parse::<f64>().ok().is_none_or(f64::is_finite) {
        return None;
    }
    let shown = match token.char_indices().nth(40) {
        Some((cut, _)) => format!("{}…", &token[..cut]),
        None => token.to_owned(),
    };
    Some((
        start,
        format!(
            "the number {shown} is beyond the range of a 64-bit float (about ±1.8e308), so this tool cannot read it and the document was not checked: JSON's grammar allows it, but RFC 8259 (section 6) leaves such a number to each reader, and most refuse it or read infinity; write a number within that range"
        ),
    ))
}

/// Where a `\uXXXX` escape of a UTF-16 surrogate that has no other half starts, among the
/// escapes just before `offset` (serde_json stops on the escape, or right after it): a
/// high surrogate not followed by a low one's escape, or a low one not after a high one's.
/// An escaped backslash (`\\ud800`) is no escape.
fn lone_surrogate(text: &[u8], offset: usize) -> Option<usize> {
    let code = |at: usize| -> Option<u16> {
        let escape = text.get(at..at + 6)?;
        if escape[0] != b'\\' || escape[1] != b'u' {
            return None;
        }
        // An odd number of backslashes before the `u`, counting this one: an escape.
        let run = text[..=at]
            .iter()
            .rev()
            .take_while(|b| **b == b'\\')
            .count();
        if run % 2 == 0 {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&escape[2..]).ok()?, 16).ok()
    };
    let high = |c: u16| (0xD800..0xDC00).contains(&c);
    let low = |c: u16| (0xDC00..0xE000).contains(&c);
    // Nearest first: the escape `offset` is in or just after, then the one before it.
    let first = offset.saturating_sub(12);
    (first..=offset.min(text.len()))
        .rev()
        .find(|&at| match code(at) {
            Some(c) if high(c) => !code(at + 6).is_some_and(low),
            Some(c) if low(c) => !at.checked_sub(6).and_then(code).is_some_and(high),
            _ => false,
        })
}

/// What a parse error says, without the position serde_json appends (" at line L column
/// C"; the finding has it in front). Its recursion limit is no syntax error: the document
/// may be valid JSON, and "not valid JSON" would send its author looking for a typo.
fn error_reason(e: &serde_json::Error) -> String {
    let reason = e.to_string();
    let reason = match reason.rfind(" at line ") {
        Some(cut) => &reason[..cut],
        None => &reason,
    };
    // serde_json has no error code to match; its message is all there is.
    if reason == "recursion limit exceeded" {
        return format!(
            "the document nests arrays and objects deeper than this tool reads ({MAX_DEPTH} levels), so it was not checked"
        );
    }
    format!("not valid JSON: {reason}")
}

/// Where a serde_json error is, as a byte offset, from which it is placed as every other
/// position here is counted ([`position_at`]): serde_json counts lines by LF alone and
/// columns in bytes, while findings end lines at CR, LF or CRLF and count columns in
/// characters (as SARIF's `unicodeCodePoints` and editors do).
fn error_offset(text: &[u8], line: usize, column: usize) -> usize {
    // Where serde_json's line `line` starts: after its (line - 1)th LF.
    let line_start = if line <= 1 {
        0
    } else {
        text.iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .nth(line - 2)
            .map_or(text.len(), |(i, _)| i + 1)
    };
    // Its column is one past the offending byte (0 before the line's first).
    line_start + column.saturating_sub(1)
}

/// The URL to fetch: a bare origin gets the kind's well-known path.
pub fn target_url(arg: &str, kind: Kind) -> Result<Uri, LoadError> {
    let invalid = |reason: String| LoadError::Http {
        url: arg.to_owned(),
        reason: format!("not a valid URL ({reason})"),
    };
    let uri: Uri = arg
        .parse()
        .map_err(|e: http::uri::InvalidUri| invalid(e.to_string()))?;
    if uri.host().is_none_or(str::is_empty) {
        return Err(invalid("no host".into()));
    }
    let bare = uri
        .path_and_query()
        .is_none_or(|pq| (pq.path() == "/" || pq.path().is_empty()) && pq.query().is_none());
    if !bare {
        return Ok(uri);
    }
    let mut parts = uri.into_parts();
    parts.path_and_query = Some(http::uri::PathAndQuery::from_static(kind.well_known_path()));
    Uri::from_parts(parts).map_err(|e| invalid(e.to_string()))
}

/// The certificate authorities a fetch trusts, and which they are, for a message.
struct Trust {
    roots: RootCerts,
    said: String,
}

/// The system's store when it has one (`SSL_CERT_FILE`, `SSL_CERT_DIR`, else the
/// distribution's bundle, as rustls-native-certs finds them), so an internal CA or a
/// TLS-inspecting proxy works as it does for curl, and as the host's own clients trust
/// (runtime/src/trust.rs); else the Mozilla roots compiled in, so a binary in an image
/// without a CA bundle still reaches public hosts. Read once per run.
fn trust() -> &'static Trust {
    static TRUST: std::sync::OnceLock<Trust> = std::sync::OnceLock::new();
    TRUST.get_or_init(|| {
        let system = rustls_native_certs::load_native_certs();
        // Either variable replaces the system's store (rustls-native-certs reads only them).
        let from = if ["SSL_CERT_FILE", "SSL_CERT_DIR"]
            .iter()
            .any(|v| std::env::var_os(v).is_some())
        {
            "SSL_CERT_FILE and SSL_CERT_DIR"
        } else {
            "the system's store"
        };
        if !system.certs.is_empty() {
            return Trust {
                said: format!("the {} certificates of {from}", system.certs.len()),
                roots: system
                    .certs
                    .iter()
                    .map(|der| Certificate::from_der(der.as_ref()).to_owned())
                    .into(),
            };
        }
        let why = system
            .errors
            .first()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        Trust {
            roots: RootCerts::WebPki,
            said: format!("the built-in Mozilla roots, as {from} gave no certificates{why}"),
        }
    })
}

/// Whether a fetch failed in TLS: ureq reports rustls's errors as its own, or, from the
/// handshake (a certificate refused), as the invalid data rustls's stream says it read.
fn tls_failure(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::Rustls(_) => true,
        ureq::Error::Io(io) => io.kind() == std::io::ErrorKind::InvalidData,
        _ => false,
    }
}

/// A fetch's failure as a sentence: ureq's own, but for a timeout, which it words
/// "timeout: global".
fn fetch_failure(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(_) => format!(
            "no complete answer within {} seconds, the time limit of a fetch",
            FETCH_TIMEOUT.as_secs()
        ),
        e => e.to_string(),
    }
}

fn fetch(arg: &str, kind: Kind) -> Result<Loaded, LoadError> {
    let url = target_url(arg, kind)?;
    let label = url.to_string();
    let failed = |reason: String| LoadError::Http {
        url: label.clone(),
        reason,
    };
    let trust = trust();
    let tls = ureq::tls::TlsConfig::builder()
        .root_certs(trust.roots.clone())
        .build();
    // A status is read here, not turned into an error, so the message can say which.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .tls_config(tls)
        .timeout_global(Some(FETCH_TIMEOUT))
        .http_status_as_error(false)
        .user_agent(concat!("openwop-validate/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let mut request = agent
        .get(&url)
        .header(VERSION_HEADER.0, VERSION_HEADER.1)
        .header("Accept", "application/json");
    if kind == Kind::AgentCard {
        // The card this tool checks is A2A 1.0's, and an A2A agent answers a request
        // without `A2A-Version` as a 0.3 client's (A2A 1.0 §3.6.2): an SDK with 0.3
        // compatibility on would serve its 0.3 view, failed by every 1.0 rule.
        request = request.header(A2A_VERSION_HEADER.0, A2A_VERSION_HEADER.1);
    }
    let mut response = request.call().map_err(|e| {
        if tls_failure(&e) {
            // Say whom it trusted: the fix is usually SSL_CERT_FILE.
            failed(format!("{e} (trusting {})", trust.said))
        } else {
            failed(fetch_failure(&e))
        }
    })?;
    let status = response.status();
    if !status.is_success() {
        return Err(failed(format!("the server answered HTTP {status}")));
    }
    // Findings name the document by where it came from after any redirect.
    let label = {
        use ureq::ResponseExt;
        response.get_uri().to_string()
    };
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = response
        .body_mut()
        .with_config()
        .limit(MAX_BYTES)
        .read_to_vec()
        .map_err(|e| match e {
            ureq::Error::BodyExceedsLimit(_) => too_large(&label),
            e => failed(fetch_failure(&e)),
        })?;
    if body.iter().all(u8::is_ascii_whitespace) {
        // A 204, or a 200 with nothing in it: "EOF while parsing a value" would say less.
        return Err(failed(format!(
            "the reply (HTTP {status}) had no body, where a JSON document was expected"
        )));
    }
    parse(label, &body).map_err(|e| match (e, content_type) {
        // A login page or an error page served with 200: say what came instead of JSON.
        (
            LoadError::Json {
                label,
                line,
                column,
                reason,
            },
            Some(ct),
        ) if !ct.contains("json") => LoadError::Json {
            label,
            line,
            column,
            reason: format!("{reason} (the server sent Content-Type `{ct}`, not JSON)"),
        },
        (e, _) => e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_names_the_time_limit() {
        let said = fetch_failure(&ureq::Error::Timeout(ureq::Timeout::Global));
        assert_eq!(
            said,
            "no complete answer within 30 seconds, the time limit of a fetch"
        );
    }

    #[test]
    fn bare_origin_gets_the_well_known_path() {
        let url = target_url("http://127.0.0.1:8080", Kind::Discovery).map(|u| u.to_string());
        assert_eq!(
            url.ok().as_deref(),
            Some("http://127.0.0.1:8080/.well-known/openwop")
        );
        let url = target_url("https://example.test/", Kind::AgentCard).map(|u| u.to_string());
        assert_eq!(
            url.ok().as_deref(),
            Some("https://example.test/.well-known/agent-card.json")
        );
        let url = target_url("https://example.test/custom/doc.json", Kind::Discovery)
            .map(|u| u.to_string());
        assert_eq!(
            url.ok().as_deref(),
            Some("https://example.test/custom/doc.json")
        );
    }

    #[test]
    fn a_byte_order_mark_is_skipped_and_columns_count_characters() {
        let doc = parse("d.json".into(), b"\xEF\xBB\xBF{\"a\": 1}").expect("parses");
        assert_eq!(doc.text, "{\"a\": 1}");
        let err = parse(
            "d.json".into(),
            "{\"a\":\"\u{e9}\u{e9}\u{e9}\" x}".as_bytes(),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        let ascii = parse("d.json".into(), b"{\"a\":\"eee\" x}")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.starts_with("d.json:1:12: "), "{err}");
        assert!(ascii.starts_with("d.json:1:12: "), "{ascii}");
    }

    #[test]
    fn quoted_patterns_expand_sorted_and_a_pattern_matching_nothing_is_an_error() {
        let dir = tempfile::tempdir().expect("dir");
        let root = dir.path().to_str().expect("UTF-8").to_owned();
        for rel in ["a/x.json", "a/b/y.json", "a/b/z.txt", "c.json"] {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(&path, "{}").expect("write");
        }
        let args = vec![
            format!("{root}/**/*.json"),
            format!("{root}/c.json"),
            format!("{root}/none/*.json"),
        ];
        let got: Vec<Result<String, String>> = expand(&args)
            .into_iter()
            .map(|r| r.map(|p| p.replacen(&root, "", 1)).map_err(|e| e.reason()))
            .collect();
        assert_eq!(
            got,
            [
                Ok("/a/b/y.json".to_owned()),
                Ok("/a/x.json".to_owned()),
                Ok("/c.json".to_owned()),
                Err("no file matches this pattern".to_owned()),
            ]
        );
        let err = load(&root, Kind::Discovery)
            .err()
            .map(|e| e.reason())
            .unwrap_or_default();
        assert!(err.contains("is a directory"), "{err}");
        assert!(err.contains("/**/*.json"), "{err}");
    }

    /// What a pattern meets and cannot check is a finding in its place, never left out:
    /// a name that is not UTF-8, a broken symbolic link. Directories that match are not
    /// documents, and a pattern without `**` goes no deeper than its components.
    #[cfg(unix)]
    #[test]
    fn a_pattern_names_what_it_cannot_check() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().expect("dir");
        let root = dir.path().to_str().expect("UTF-8").to_owned();
        for rel in ["a.json", "dir.json/x.json", "sub/deep.json"] {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(&path, "{}").expect("write");
        }
        let odd = std::ffi::OsStr::from_bytes(b"b\xff.json");
        std::fs::write(dir.path().join(odd), "{}").expect("write");
        std::os::unix::fs::symlink("nowhere", dir.path().join("c.json")).expect("symlink");
        let got: Vec<Result<String, String>> = expand(&[format!("{root}/*.json")])
            .into_iter()
            .map(|r| {
                r.map(|p| p.replacen(&root, "", 1))
                    .map_err(|e| format!("{}: {}", e.label().replacen(&root, "", 1), e.reason()))
            })
            .collect();
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0], Ok("/a.json".to_owned()));
        let odd = got[1].as_ref().err().cloned().unwrap_or_default();
        assert!(
            odd.starts_with("/b\u{fffd}.json: matches `") && odd.contains("is not UTF-8"),
            "{odd}"
        );
        let broken = got[2].as_ref().err().cloned().unwrap_or_default();
        assert!(
            broken.starts_with("/c.json: matches `") && broken.contains("cannot be read"),
            "{broken}"
        );

        // Under `**`, every depth, and a symbolic link back up is not walked round.
        std::os::unix::fs::symlink("..", dir.path().join("sub/up")).expect("symlink");
        let got: Vec<String> = expand(&[format!("{root}/**/*.json")])
            .into_iter()
            .map(|r| match r {
                Ok(p) => p.replacen(&root, "", 1),
                Err(e) => format!("error: {}", e.label().replacen(&root, "", 1)),
            })
            .collect();
        assert_eq!(
            got,
            [
                "/a.json",
                "error: /b\u{fffd}.json",
                "error: /c.json",
                "/dir.json/x.json",
                "/sub/deep.json"
            ]
        );
    }

    /// Lexical only: `.` segments and repeated `/` go, an absolute path under the working
    /// directory becomes relative, and `..`, URLs and `-` stay as written.
    #[test]
    fn paths_are_written_one_way() {
        let cwd = Some(Path::new("/w/repo"));
        for (path, want) in [
            ("bl/a.json", "bl/a.json"),
            ("./bl/a.json", "bl/a.json"),
            ("././/bl//./a.json", "bl/a.json"),
            ("/w/repo/bl/a.json", "bl/a.json"),
            ("/w/repo//bl/./a.json", "bl/a.json"),
            ("/w/repo/../x.json", "/w/repo/../x.json"),
            ("/w/repository/a.json", "/w/repository/a.json"),
            ("/other//a.json", "/other/a.json"),
            ("//server/share/a.json", "//server/share/a.json"),
            ("../bl/a.json", "../bl/a.json"),
            (".", "."),
            ("-", "-"),
            ("https://h.example//x", "https://h.example//x"),
        ] {
            assert_eq!(normalize(path, cwd), want, "{path}");
        }
        assert_eq!(normalize("/w/repo/a.json", None), "/w/repo/a.json");
        assert_eq!(
            normalize("/tmp/a.json", Some(Path::new("/"))),
            "/tmp/a.json"
        );
    }

    /// serde_json counts lines by LF alone; the error is placed as findings are, a lone CR
    /// ending a line too.
    #[test]
    fn a_syntax_error_after_lone_crs_is_on_its_line() {
        let err = parse("d.json".into(), b"{\r  \"a\": 1,\r\n  \"b\": 2,\n  oops\r}")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.starts_with("d.json:4:3: not valid JSON: key must be a string"),
            "{err}"
        );
    }

    /// Nesting past serde_json's recursion limit is said as such, at the first level it
    /// refuses, and [`MAX_DEPTH`] levels are read.
    #[test]
    fn nesting_deeper_than_this_tool_reads_is_no_syntax_error() {
        let nested = |depth: usize| "[".repeat(depth) + &"]".repeat(depth);
        let err = parse("d.json".into(), nested(MAX_DEPTH + 50).as_bytes())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(
            err,
            format!(
                "d.json:1:{}: the document nests arrays and objects deeper than this tool reads ({MAX_DEPTH} levels), so it was not checked",
                MAX_DEPTH + 1
            )
        );
        assert!(parse("d.json".into(), nested(MAX_DEPTH).as_bytes()).is_ok());
    }

    /// JSON's grammar allows a number beyond a 64-bit float and a lone surrogate escape;
    /// this tool reads neither, and says which, at the number's first character or the
    /// escape's backslash, not "not valid JSON" where serde_json stopped.
    #[test]
    fn a_number_beyond_a_double_and_a_lone_surrogate_say_what_and_where() {
        let err = |text: &str| {
            parse("d.json".into(), text.as_bytes())
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        for (text, want) in [
            (
                "{\n  \"x\": 1e999\n}",
                "d.json:2:8: the number 1e999 is beyond the range of a 64-bit float",
            ),
            (
                "[1, -1.5E+400]",
                "d.json:1:5: the number -1.5E+400 is beyond the range",
            ),
            // serde_json stops after a high half, at what should be the other half.
            (
                r#"{"name": "h\ud800"}"#,
                "d.json:1:12: the escape `\\ud800` is half of a UTF-16 surrogate pair without the other half",
            ),
            // ... and on a low half, at its last digit.
            (
                r#"["ok\udc00x"]"#,
                "d.json:1:5: the escape `\\udc00` is half of a UTF-16 surrogate pair",
            ),
            (
                r#"["\uD800\u0041"]"#,
                "d.json:1:3: the escape `\\uD800` is half",
            ),
            (
                r#"{"\udfff": 1}"#,
                "d.json:1:3: the escape `\\udfff` is half",
            ),
            (
                r#"["\ud83d\ude00", "\ude00"]"#,
                "d.json:1:19: the escape `\\ude00` is half",
            ),
        ] {
            let got = err(text);
            assert!(got.starts_with(want), "{text}: {got}");
            assert!(got.contains("the document was not checked"), "{got}");
            assert!(!got.contains("not valid JSON"), "{got}");
        }
        let long = err(&format!("[{}e999]", "9".repeat(100)));
        assert!(
            long.starts_with(&format!(
                "d.json:1:2: the number {}… is beyond",
                "9".repeat(40)
            )),
            "{long}"
        );
        // A pair, an escaped backslash before `u`, a number that rounds to 0 or is the
        // largest double: all read.
        let fine = r#"["\ud83d\ude00", "\\ud800", 1e-999, 1.7976931348623157e308]"#;
        assert!(parse("d.json".into(), fine.as_bytes()).is_ok());
        // A broken escape or number is still a syntax error.
        for bad in [r#"["\u12"]"#, "[1e]", "[01]"] {
            let got = err(bad);
            assert!(
                got.starts_with("d.json:1:") && got.contains(": not valid JSON: "),
                "{bad}: {got}"
            );
        }
    }

    /// Another encoding than UTF-8, or nothing at all, is said as such, not as a syntax
    /// error where serde_json stopped.
    #[test]
    fn an_encoding_other_than_utf8_or_an_empty_file_is_named() {
        let err = |text: &[u8]| {
            parse("d.json".into(), text)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let utf16 = |big: bool, bom: bool| {
            let mut out: Vec<u8> = Vec::new();
            if bom {
                out.extend(if big { [0xFE, 0xFF] } else { [0xFF, 0xFE] });
            }
            for unit in "{\"a\": 1}".encode_utf16() {
                out.extend(if big {
                    unit.to_be_bytes()
                } else {
                    unit.to_le_bytes()
                });
            }
            out
        };
        for (text, want) in [
            (
                utf16(false, true),
                "d.json:1:1: the document is UTF-16 (little-endian, byte order mark FF FE), not UTF-8",
            ),
            (
                utf16(true, true),
                "d.json:1:1: the document is UTF-16 (big-endian, byte order mark FE FF)",
            ),
            (
                utf16(false, false),
                "d.json:1:1: the document is UTF-16 (little-endian, no byte order mark)",
            ),
            (
                utf16(true, false),
                "d.json:1:1: the document is UTF-16 (big-endian, no byte order mark)",
            ),
            (
                b"\xFF\xFE\0\0{\0\0\0".to_vec(),
                "d.json:1:1: the document is UTF-32 (little-endian, byte order mark FF FE 00 00)",
            ),
            (
                b"\0\0\0{".to_vec(),
                "d.json:1:1: the document is UTF-32 (big-endian, no byte order mark)",
            ),
            (
                b"{\n  \"a\": 1, caf\xE9\n}".to_vec(),
                "d.json:2:14: byte 0xE9 is not UTF-8",
            ),
            (
                b"[\"caf\xE9\"]".to_vec(),
                "d.json:1:6: byte 0xE9 is not UTF-8",
            ),
            (b"".to_vec(), "d.json:1:1: the document is empty"),
            (
                b"\xEF\xBB\xBF".to_vec(),
                "d.json:1:1: the document is empty",
            ),
            (
                b" \r\n\t\n".to_vec(),
                "d.json:1:1: the document holds only whitespace",
            ),
        ] {
            let got = err(&text);
            assert!(got.starts_with(want), "{want}: {got}");
        }
        assert!(parse("d.json".into(), "[\"caf\u{e9}\"]".as_bytes()).is_ok());
    }

    #[test]
    fn bad_json_names_line_and_column() {
        let err = parse("doc.json".into(), b"{\n  \"a\": 1,\n  oops\n}")
            .err()
            .map(|e| e.to_string());
        let err = err.unwrap_or_default();
        assert!(err.starts_with("doc.json:3:3: not valid JSON: "), "{err}");
        assert!(!err.contains(" at line "), "{err}");
    }
}
