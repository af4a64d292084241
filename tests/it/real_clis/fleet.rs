//! The real codex and claude CLIs as the workers of a fleet: two clones, standing for two
//! machines, claim their tasks on one bare remote served by `git daemon` on 127.0.0.1 and
//! land their passes through it.

use super::{ModelServer, clis, repo_with_real_backends_and, wait};
use crate::common::TestEnv;
use crate::fleet::Daemon;

#[test]
#[ignore = "needs the real codex and claude CLIs; .ci/run installs them and runs these with --ignored"]
fn codex_and_claude_on_two_machines_claim_and_land_through_git_daemon() {
    let bin = clis();
    let env = TestEnv::new();
    let server = ModelServer::start(&env);
    let origin = repo_with_real_backends_and(&env, &bin, &server, "");
    let bare = crate::fleet::bare_remote(&env, &origin);
    let start = env.git_ok(&bare, &["rev-parse", "main"]).trim().to_string();
    let daemon = Daemon::start(env.root());
    let url = format!("git://127.0.0.1:{}/remote.git", daemon.port);
    // Machine, backend, the file its worker writes (its scope).
    let machines = [
        ("box-a", "codex", "hello-a.txt"),
        ("box-b", "claude", "hello-b.txt"),
    ];
    let mut runs = Vec::new();
    for (machine, backend, file) in machines {
        let dir = env.root().join(machine);
        env.git_ok(env.root(), &["clone", "-q", &url, dir.to_str().unwrap()]);
        env.crew(&dir, &["init"]).expect_code(0);
        let out = env.crew(
            &dir,
            &[
                "dispatch",
                "--task",
                file,
                "--backend",
                backend,
                "--scope",
                file,
                "--prompt",
                &format!("Please [[mock:write {file}]]"),
                "--verify",
                &format!("grep -q 'hello from the mock' {file}"),
                "--remote",
                "origin",
                "--set",
                &format!("fleet.machine={machine}"),
            ],
        );
        out.expect_code(0);
        runs.push((dir, out.json()["run"].as_str().unwrap().to_string()));
    }
    // Both claims are on the remote, each naming its machine.
    let claims = env.git_ok(
        &bare,
        &["for-each-ref", "--format=%(refname)", "refs/crew/claims/"],
    );
    for (machine, _, file) in machines {
        let text = env.git_ok(
            &bare,
            &["cat-file", "-p", &format!("refs/crew/claims/{file}")],
        );
        assert!(text.contains(machine), "{claims}\n{text}");
    }
    for ((dir, run), (_, backend, _)) in runs.iter().zip(machines) {
        let (out, result) = wait(&env, dir, run);
        out.expect_code(0);
        assert_eq!(result["outcome"], "pass", "{backend}: {result}");
        assert_eq!(result["backend"], backend, "{result}");
    }
    // Each machine lands its pass on the remote's tip, the second on the first's landing.
    let mut tips = vec![start];
    for (dir, run) in &runs {
        let out = env.crew(dir, &["integrate", run, "--remote", "origin"]);
        out.expect_code(0);
        let json = out.json();
        assert_eq!(json["remote"]["released_claim"], true, "{json}");
        let tip = env.git_ok(&bare, &["rev-parse", "main"]).trim().to_string();
        assert_eq!(json["commit"], tip.as_str());
        env.assert_in_sealed_scope(dir, run, tips.last().unwrap(), &tip);
        tips.push(tip);
    }
    for (_, _, file) in machines {
        assert_eq!(
            env.git_ok(&bare, &["show", &format!("main:{file}")]),
            "hello from the mock\n"
        );
    }
    let claims = env.git_ok(
        &bare,
        &["for-each-ref", "--format=%(refname)", "refs/crew/claims/"],
    );
    assert_eq!(claims.trim(), "", "every claim let go");
    let fsck = env.git(&bare, &["fsck", "--no-progress"]);
    assert_eq!(fsck.code, 0, "{fsck:?}");
    // Both CLIs did the work, through the model server.
    let writes = server
        .requests()
        .iter()
        .filter(|r| r["answer"] == "write")
        .count();
    assert!(writes >= 2, "{:?}", server.requests());
}
