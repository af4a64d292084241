//! `footer`: the footer of a worker's reply, read as a stream.

use std::io::{BufRead, BufReader, Read};

use crate::core::footer::FooterScanner;
use crate::error::{CrewError, Result};

/// Streams a reply through the scanner, one line at a time, whatever its bytes: at most
/// `cap` of them (exit 2, `file-too-large`, past that; no more than `cap + 1` are read).
pub fn scan(input: impl Read, cap: u64) -> Result<crate::core::footer::Extraction> {
    let mut reader = BufReader::with_capacity(1 << 16, input.take(cap.saturating_add(1)));
    let mut scanner = FooterScanner::new();
    let mut line = Vec::with_capacity(256);
    let mut read = 0u64;
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(|e| {
            CrewError::usage("file-unreadable", format!("cannot read the reply: {e}"))
                .hinted("give the path of a regular file you can read")
        })?;
        if n == 0 {
            break;
        }
        read += n as u64;
        if read > cap {
            return Err(CrewError::usage(
                "file-too-large",
                format!(
                    "the reply holds more than {}, the most it may hold",
                    super::files::size(cap)
                ),
            )
            .hinted("pass only the end of the reply: the footer is its last part"));
        }
        scanner.push_bytes(&line);
    }
    Ok(scanner.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_over_the_cap_is_refused_without_reading_past_it() {
        let err = scan(std::io::repeat(b'x'), 1 << 20).unwrap_err();
        assert_eq!((err.code, err.exit_code()), ("file-too-large", 2));
        assert!(
            err.message.contains("1 MiB (1048576 bytes)"),
            "{}",
            err.message
        );
        assert!(scan("## Result\n".as_bytes(), 10).is_ok());
        assert!(scan("## Result\nx".as_bytes(), 10).is_err());
    }
}
