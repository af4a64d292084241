//! Bounded output: what a worker (or a verify) prints is kept in a file per stream and
//! attempt, capped — the first part as it came, then only the latest part, with the cut
//! marked — so a worker that floods stdout fills neither the disk nor the supervisor's
//! memory, and the footer at the end of a reply survives. Disk per stream stays under
//! `cap`; memory is one buffer. Files written to as logs (transcripts, a run's supervisor
//! log) are opened here too ([`open_append`]).

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::run::error::{Context, Result};

/// The default `fences.max_output` per stream and attempt, in bytes.
pub const DEFAULT_CAP: u64 = crate::core::flight::DEFAULT_MAX_OUTPUT;

/// The line that marks where bytes were cut.
pub fn marker(cut: u64) -> String {
    format!("\n[git-crew: {cut} bytes of output cut here]\n")
}

/// A capped file being written: `head` bytes go straight into it; the rest into a tail
/// file that is set aside (`.prev`) each time it reaches `tail` bytes, the set-aside one
/// before it dropped. [`Capped::finish`] appends the marker and the kept tail.
pub struct Capped {
    path: PathBuf,
    file: File,
    head_left: u64,
    tail: Option<(File, u64)>,
    tail_limit: u64,
    cut: u64,
    done: bool,
}

impl Capped {
    /// A capped file at `path` (created, truncated) holding at most about `cap` bytes.
    pub fn create(path: &Path, cap: u64) -> Result<Capped> {
        let file =
            File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        let cap = cap.max(4096);
        Ok(Capped {
            path: path.to_path_buf(),
            file,
            head_left: cap / 4,
            tail: None,
            tail_limit: (cap - cap / 4) / 2,
            cut: 0,
            done: false,
        })
    }

    fn side(&self, ext: &str) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(ext);
        PathBuf::from(name)
    }

    /// Takes `bytes`; what is over the cap is dropped from the middle, never the end.
    pub fn write(&mut self, mut bytes: &[u8]) {
        if self.done {
            return;
        }
        if self.head_left > 0 {
            let n = (bytes.len() as u64).min(self.head_left) as usize;
            let _ = self.file.write_all(&bytes[..n]);
            self.head_left -= n as u64;
            bytes = &bytes[n..];
        }
        while !bytes.is_empty() {
            if self.tail.is_none() {
                match File::create(self.side(".tail")) {
                    Ok(f) => self.tail = Some((f, 0)),
                    Err(_) => return,
                }
            }
            let Some((file, len)) = self.tail.as_mut() else {
                return;
            };
            let n = (bytes.len() as u64).min(self.tail_limit - *len) as usize;
            let _ = file.write_all(&bytes[..n]);
            *len += n as u64;
            bytes = &bytes[n..];
            if *len >= self.tail_limit {
                // Set this part aside; the one set aside before it is dropped.
                let prev = self.side(".prev");
                if let Ok(meta) = std::fs::metadata(&prev) {
                    self.cut += meta.len();
                }
                let _ = std::fs::rename(self.side(".tail"), &prev);
                self.tail = None;
            }
        }
    }

    /// Writes the kept tail after the head — with the marker when anything was cut, the
    /// first (partial) line of the tail dropped then — and removes the side files.
    pub fn finish(&mut self) -> Result<()> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        self.tail = None;
        let (prev, tail) = (self.side(".prev"), self.side(".tail"));
        let kept: Vec<File> = [&prev, &tail]
            .into_iter()
            .filter_map(|part| File::open(part).ok())
            .collect();
        let mut skip_line = self.cut > 0;
        if skip_line {
            self.file.write_all(marker(self.cut).as_bytes())?;
        }
        let mut buf = vec![0u8; 64 * 1024];
        let parts = kept.len();
        for (i, mut part) in kept.into_iter().enumerate() {
            let last_part = i + 1 == parts;
            loop {
                let n = part.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                let mut chunk = &buf[..n];
                if skip_line {
                    match chunk.iter().position(|b| *b == b'\n') {
                        Some(i) => {
                            chunk = &chunk[i + 1..];
                            skip_line = false;
                        }
                        // A last line longer than what is kept: keep it as it is.
                        None if last_part && is_last_chunk(&part) => skip_line = false,
                        None => continue,
                    }
                }
                self.file.write_all(chunk)?;
            }
        }
        let _ = std::fs::remove_file(prev);
        let _ = std::fs::remove_file(tail);
        self.file.flush()?;
        Ok(())
    }

    /// Bytes dropped from the middle so far.
    pub fn cut(&self) -> u64 {
        self.cut
    }
}

/// Whether what was just read from `part` reached its end.
fn is_last_chunk(part: &File) -> bool {
    use std::io::Seek;
    let mut part = part;
    match (part.stream_position(), part.metadata()) {
        (Ok(pos), Ok(meta)) => pos >= meta.len(),
        _ => true,
    }
}

/// Appends an attempt's `stdout` and `stderr` files to the transcript at `transcript`
/// under their own headings, streaming (never the whole file in memory).
pub fn archive(transcript: &Path, stdout: &Path, stderr: &Path) -> Result<()> {
    let mut out = open_append(transcript)?;
    for (name, path) in [("stdout", stdout), ("stderr", stderr)] {
        let Ok(mut file) = File::open(path) else {
            continue;
        };
        if file.metadata().map(|m| m.len()).unwrap_or(0) == 0 {
            continue;
        }
        writeln!(out, "----- {name} -----")?;
        std::io::copy(&mut file, &mut out)?;
        writeln!(out)?;
    }
    Ok(())
}

/// Opens a file for appending, creating it (mode 0600) with its folder.
pub fn open_append(path: &Path) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_keeps_its_head_and_its_tail_and_marks_the_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let mut capped = Capped::create(&path, 4096).unwrap();
        capped.write(b"first line\n");
        for i in 0..10_000 {
            capped.write(format!("line {i}\n").as_bytes());
        }
        capped.write(b"## Result\nthe end\n");
        capped.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.len() < 4096 + 200, "{}", text.len());
        assert!(text.starts_with("first line\nline 0\n"));
        assert!(text.ends_with("line 9999\n## Result\nthe end\n"), "{text}");
        assert!(text.contains("bytes of output cut here]\n"), "{text}");
        // The line after the marker is a whole one.
        let after = text.split("cut here]\n").nth(1).unwrap();
        assert!(after.starts_with("line "), "{after}");
        assert!(!dir.path().join("out.tail").exists());
        assert!(!dir.path().join("out.prev").exists());
    }

    #[test]
    fn output_under_the_cap_is_kept_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let mut capped = Capped::create(&path, 64 * 1024).unwrap();
        let mut all = String::new();
        for i in 0..2000 {
            let line = format!("line {i}\n");
            capped.write(line.as_bytes());
            all.push_str(&line);
        }
        capped.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), all);
        assert_eq!(capped.cut(), 0);
    }
}
