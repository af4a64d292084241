//! `git crew footer`: the relay primitive on files and standard input.

use crate::common::{TestEnv, write};

const REPLY: &str = "I looked around.\n\n## Result\nAdded the route.\n\n## How to verify\ncargo test routes\n\n## Deferred / concerns\nNone.\n";

#[test]
fn a_complete_reply_gives_the_footer() {
    let env = TestEnv::new();
    let file = env.root().join("reply.md");
    write(&file, REPLY);
    let out = env.crew(env.root(), &["footer", "reply.md"]);
    out.expect_code(0);
    assert_eq!(
        out.json(),
        serde_json::json!({
            "ok": true,
            "footer_text": "## Result\nAdded the route.\n\n## How to verify\ncargo test routes\n\n## Deferred / concerns\nNone.",
            "sections": {"result": "Added the route.", "how_to_verify": "cargo test routes", "deferred": "None."},
            "missing": [],
            "truncated": false,
            "needs_help": null,
        })
    );
    let out = env.crew_stdin(env.root(), &["footer", "--human"], REPLY.as_bytes());
    assert_eq!(
        env.snapshot(&out),
        "## Result\nAdded the route.\n\n## How to verify\ncargo test routes\n\n## Deferred / concerns\nNone.\n[EOF]\n[exit status: 0]"
    );
}

#[test]
fn a_missing_section_is_exit_1_and_named() {
    let env = TestEnv::new();
    let out = env.crew_stdin(
        env.root(),
        &["footer"],
        b"## RESULT\ndone\n##how to verify\nlook\n",
    );
    out.expect_code(1);
    let json = out.json();
    assert_eq!(json["ok"], false);
    assert_eq!(json["error"]["code"], "footer-rejected");
    assert_eq!(json["missing"], serde_json::json!(["deferred"]));
    assert_eq!(json["footer_text"], serde_json::Value::Null);
    assert_eq!(json["sections"]["result"], "done");
    assert!(
        json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("missing section `## Deferred / concerns`")
    );
}

#[test]
fn needs_help_is_exit_5_with_its_fields() {
    let env = TestEnv::new();
    let reply = b"NEEDS-HELP: which store?\ntried: sqlite\noptions: sqlite | postgres\nleaning: sqlite\ncost-if-wrong: a migration\n";
    let out = env.crew_stdin(env.root(), &["footer"], reply);
    out.expect_code(5);
    let json = out.json();
    assert_eq!(json["ok"], true);
    assert_eq!(json["needs_help"]["leaning"], "sqlite");
    assert_eq!(json["needs_help"]["cost_if_wrong"], "a migration");

    let out = env.crew_stdin(env.root(), &["footer"], b"NEEDS-HELP: stuck\ntried: x\n");
    out.expect_code(1);
    assert_eq!(out.json()["error"]["code"], "needs-help-incomplete");
}

#[test]
fn bytes_that_are_not_utf8_and_big_inputs_are_streamed() {
    let env = TestEnv::new();
    let mut reply = Vec::new();
    for i in 0..200_000 {
        reply.extend_from_slice(format!("noise line {i} ").as_bytes());
        reply.extend_from_slice(b"\xff\xfe\n");
        if i == 100 {
            reply.extend_from_slice(b"## Result\nearly false start\n");
        }
    }
    reply.extend_from_slice(
        b"## Result\nfinal \xc3\x28 answer\n## How to verify\nrun\n## Deferred / concerns\n\xff\n",
    );
    let out = env.crew_stdin(env.root(), &["footer"], &reply);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["sections"]["result"], "final \u{fffd}( answer");
    assert_eq!(json["truncated"], false);
}

#[test]
fn a_missing_file_is_not_found() {
    let env = TestEnv::new();
    let out = env.crew(env.root(), &["footer", "nope.md"]);
    out.expect_code(3);
    assert_eq!(out.json()["error"]["code"], "file-not-found");
}
