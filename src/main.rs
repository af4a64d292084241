fn main() -> std::process::ExitCode {
    git_crew::cli::main()
}
