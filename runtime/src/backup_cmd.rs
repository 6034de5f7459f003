//! `openwop backup DEST`: a consistent copy of a live SQLite data dir.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

/// Copy a SQLite data dir, live, into a new directory.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  openwop backup /var/backups/openwop-$(date +%F)
      Copy ./openwop-data while `openwop serve` keeps running on it: the database as of
      one commit (SQLite's online backup, not a file copy), plus the dev key and secrets
      beside it.

  openwop backup --data-dir /srv/openwop/data /mnt/backup/openwop
      Another data dir.

Restore: stop the host, then start it on the backup (or copy the backup's files into an
empty data dir first):
  openwop serve --data-dir /var/backups/openwop-2026-12-06

PostgreSQL stores are backed up with PostgreSQL's own tools, e.g.
  pg_dump --format=custom --file=openwop.dump postgres://…/openwop
  pg_restore --dbname=postgres://…/openwop_restored openwop.dump
and `openwop serve --database postgres://…/openwop_restored` serves the restored runs.")]
pub struct BackupArgs {
    /// The data dir to copy (the one `openwop serve --data-dir` uses).
    #[arg(
        long,
        value_name = "DIR",
        env = "OPENWOP_DATA_DIR",
        default_value = "./openwop-data"
    )]
    data_dir: PathBuf,
    /// Where the copy goes: a new or empty directory.
    #[arg(value_name = "DEST")]
    dest: PathBuf,
}

pub fn run(args: BackupArgs) -> ExitCode {
    eprintln!(
        "openwop backup: copying {} into {} …",
        args.data_dir.display(),
        args.dest.display()
    );
    let started = std::time::Instant::now();
    match crate::store::backup_sqlite(&args.data_dir, &args.dest) {
        Ok(written) => {
            eprintln!(
                "openwop backup: database {} bytes and {} other file(s) in {:.1} s; restore by \
                 serving --data-dir {}",
                written.database_bytes,
                written.files.len(),
                started.elapsed().as_secs_f64(),
                args.dest.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("openwop backup: {e}");
            ExitCode::FAILURE
        }
    }
}
