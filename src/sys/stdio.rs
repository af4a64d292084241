//! The standard streams, taken for a protocol: a server that speaks on stdin and stdout
//! keeps private copies of them, and points fd 0 at `/dev/null` and fd 1 at stderr, so
//! that nothing else this process or its children read or write can reach the protocol.

use std::os::fd::OwnedFd;

/// Duplicates stdin and stdout (close-on-exec, so no child inherits the copies), then
/// points fd 0 at `/dev/null` and fd 1 at stderr. Returns the copies: the protocol's
/// input and output.
pub fn take() -> std::io::Result<(OwnedFd, OwnedFd)> {
    use rustix::io::fcntl_dupfd_cloexec;
    let input = fcntl_dupfd_cloexec(std::io::stdin(), 3)?;
    let output = fcntl_dupfd_cloexec(std::io::stdout(), 3)?;
    let null = std::fs::File::open("/dev/null")?;
    rustix::stdio::dup2_stdin(&null)?;
    rustix::stdio::dup2_stdout(std::io::stderr())?;
    Ok((input, output))
}
