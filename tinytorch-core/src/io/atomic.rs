//! Crash-safe file replacement: write a sibling temp file, `fsync` it, rename it over the
//! target, then `fsync` the directory. A crash at any point leaves either the old file or the
//! new one whole, never a torn mix, because `rename` within one directory is atomic on POSIX
//! file systems (and `MoveFileEx` replaces atomically on Windows).

use crate::error::{Error, Result};
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Replace `path` with what `fill` writes, atomically; `op` names the caller in error
/// messages. `fill` streams into a buffered temp file, so a large state dict never has to be
/// assembled in memory. If `fill` fails, the temp file is removed and `path` is untouched.
pub fn write_atomic(
    op: &'static str,
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    let tmp = temp_path(path);
    if let Err(e) = write_and_rename(&tmp, path, fill) {
        // Best effort: the temp file is garbage now; the target was never touched.
        let _ = fs::remove_file(&tmp);
        return Err(match e {
            Error::Io(e) => io_error(op, path, "cannot write", e),
            other => other,
        });
    }
    sync_parent_dir(path);
    Ok(())
}

fn write_and_rename(
    tmp: &Path,
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    let mut writer = BufWriter::with_capacity(1 << 20, File::create(tmp)?);
    fill(&mut writer)?;
    let file = writer.into_inner().map_err(|e| e.into_error())?;
    // The data must be on disk before the rename makes it visible under the real name,
    // otherwise a power loss could leave a renamed but empty file.
    file.sync_all()?;
    drop(file);
    fs::rename(tmp, path)?;
    Ok(())
}

/// `<path>.tmp-<pid>-<n>` in the same directory (a rename across file systems is not atomic);
/// the counter keeps two saves from one process apart.
pub(crate) fn temp_path(path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".tmp-{}-{n}", std::process::id()));
    PathBuf::from(name)
}

/// Remove the temp files of saves of `path` that a crash (kill -9, power loss) cut short:
/// `<path>.tmp-<pid>-<n>` beside it (see [`temp_path`]), which a save renames over `path`
/// only once it is whole. Call it only where no save of `path` can be in progress (a training
/// run's start, in the directory it owns). Errors are ignored: a leftover is only garbage.
pub fn remove_torn_saves(path: &Path) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = format!("{}.tmp-", name.to_string_lossy());
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Make the rename itself durable. Not every platform or file system lets a directory be
/// opened and synced, so failures are ignored: the data is already safe under one name.
fn sync_parent_dir(path: &Path) {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if let Ok(dir) = File::open(parent) {
        let _ = dir.sync_all();
    }
}

/// An I/O error that names the operation, the file and what was being done.
pub(crate) fn io_error(op: &'static str, path: &Path, doing: &str, e: io::Error) -> Error {
    Error::Io(io::Error::new(
        e.kind(),
        format!("{op}: {doing} '{}': {e}", path.display()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("tinytorch-atomic-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn bytes(b: &'static [u8]) -> impl FnOnce(&mut dyn Write) -> Result<()> {
        move |w| Ok(w.write_all(b)?)
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn replaces_the_file() {
        let dir = scratch_dir("replace");
        let path = dir.join("a.bin");
        write_atomic("test", &path, bytes(b"old")).unwrap();
        write_atomic("test", &path, bytes(b"new contents")).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new contents");
        assert_eq!(leftovers(&dir), vec!["a.bin".to_string()]);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn failure_halfway_keeps_the_old_file_and_cleans_up() {
        let dir = scratch_dir("fail");
        let path = dir.join("a.bin");
        write_atomic("test", &path, bytes(b"old")).unwrap();
        let err = write_atomic("test", &path, |w| {
            w.write_all(b"01234")?;
            Err(io::Error::other("disk full").into())
        })
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("a.bin") && msg.contains("disk full"), "{msg}");
        assert_eq!(fs::read(&path).unwrap(), b"old");
        assert_eq!(leftovers(&dir), vec!["a.bin".to_string()]);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn crash_halfway_keeps_the_old_file() {
        let dir = scratch_dir("crash");
        let path = dir.join("a.bin");
        write_atomic("test", &path, bytes(b"old")).unwrap();
        // A panic skips the cleanup, like a killed process: the half-written temp file stays
        // behind, but the target is untouched.
        let crashed = std::panic::catch_unwind(|| {
            let _ = write_atomic("test", &path, |w| {
                w.write_all(b"01234")?;
                w.flush()?;
                panic!("simulated crash");
            });
        });
        assert!(crashed.is_err());
        assert_eq!(fs::read(&path).unwrap(), b"old");
        let names = leftovers(&dir);
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names[1].starts_with("a.bin.tmp-"), "{names:?}");
        // The next save still works.
        write_atomic("test", &path, bytes(b"newer")).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"newer");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn torn_saves_are_removed_and_nothing_else() {
        let dir = scratch_dir("torn");
        let path = dir.join("a.bin");
        write_atomic("test", &path, bytes(b"whole")).unwrap();
        // What crashed saves of a.bin leave, and files that are not theirs.
        for name in [
            "a.bin.tmp-41-0",
            "a.bin.tmp-42-3",
            "b.bin.tmp-41-0",
            "a.bin.old",
        ] {
            fs::write(dir.join(name), b"x").unwrap();
        }
        remove_torn_saves(&path);
        assert_eq!(leftovers(&dir), ["a.bin", "a.bin.old", "b.bin.tmp-41-0"]);
        assert_eq!(fs::read(&path).unwrap(), b"whole");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn other_errors_pass_through_unchanged() {
        let dir = scratch_dir("other");
        let path = dir.join("a.bin");
        let err = write_atomic("test", &path, |_| {
            Err(Error::invalid("encode", "bad value"))
        })
        .unwrap_err();
        assert!(matches!(err, Error::Invalid { op: "encode", .. }), "{err}");
        assert!(leftovers(&dir).is_empty());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn missing_directory_is_an_error_naming_the_file() {
        let dir = scratch_dir("missing");
        let path = dir.join("no/such/dir/a.bin");
        let msg = write_atomic("save", &path, bytes(b"x"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("save") && msg.contains("a.bin"), "{msg}");
        let _ = fs::remove_dir_all(&dir);
    }
}
