//! The module graph of `src/` has no circle. Every `use` tree and every path written
//! inline (`crate::…`, `super::…`, `self::…`) outside a file's tests is an edge from the
//! file's module to the deepest module the path names; a module reaching its own parent
//! is not an edge (a child may use what its parent declares). A circle fails the test
//! and is named.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Module = Vec<String>;

/// `src/run/supervisor/mod.rs` → `run::supervisor`; `src/lib.rs` → the root.
fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Module = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The text with comments, string and char literals blanked, and everything from the
/// first `#[cfg(test)]` on left off (tests may import what they like).
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(at) => &text[..at],
        None => text,
    };
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if b[i] == b'r' && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#')) {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(b[i] as char);
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            j += 1;
            while j < b.len() && !b[j..].starts_with(&close) {
                j += 1;
            }
            i = j + close.len();
            out.push_str("\"\"");
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            i += 3; // 'x'
            out.push(' ');
        } else if b[i] == b'\'' && b.get(i + 1) == Some(&b'\\') {
            i += 2;
            while i < b.len() && b[i] != b'\'' {
                i += 1;
            }
            i += 1;
            out.push(' ');
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Every path a `use` tree names: `a::{b, c::{d as e, self}}` → `a::b`, `a::c::d`,
/// `a::c`.
fn expand(tree: &str) -> Vec<Vec<String>> {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let prefix: Vec<String> = split_path(tree[..open].trim_end_matches("::"));
        let body = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut parts = Vec::new();
        let (mut depth, mut start) = (0, 0);
        for (at, c) in body.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&body[start..at]);
                    start = at + 1;
                }
                _ => {}
            }
        }
        parts.push(&body[start..]);
        let mut out = Vec::new();
        for part in parts.into_iter().filter(|p| !p.trim().is_empty()) {
            for rest in expand(part) {
                let mut path = prefix.clone();
                path.extend(rest.into_iter().filter(|s| s != "self"));
                out.push(path);
            }
        }
        return out;
    }
    let tree = tree.split(" as ").next().unwrap_or(tree);
    vec![split_path(tree)]
}

fn split_path(path: &str) -> Vec<String> {
    path.split("::")
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Every path the code names from `crate`, `super` or `self`: its `use` trees, and the
/// paths written inline.
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before_ok = rest[..at].chars().next_back().is_none_or(|c| !is_ident(c));
        let after = &rest[at + 4..];
        if before_ok && let Some(end) = after.find(';') {
            paths.extend(expand(&after[..end]));
        }
        rest = after;
    }
    for root in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(found) = code[from..].find(root) {
            let at = from + found;
            from = at + root.len();
            if code[..at].chars().next_back().is_some_and(is_ident) {
                continue;
            }
            let end = code[at..]
                .find(|c: char| !(is_ident(c) || c == ':'))
                .map_or(code.len(), |e| at + e);
            paths.push(split_path(&code[at..end]));
        }
    }
    paths
}

/// The module a path from `from` leads to: the deepest known module on its way.
fn target(from: &Module, path: &[String], known: &BTreeSet<Module>) -> Option<Module> {
    let (mut base, mut rest): (Module, &[String]) = match path.first()?.as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (from.clone(), &path[1..]),
        "super" => (from.clone(), path),
        _ => return None,
    };
    // `super` in `a/b.rs` and in `a/b/mod.rs` (both the module a::b) is `a`.
    while rest.first().is_some_and(|s| s == "super") {
        base.pop();
        rest = &rest[1..];
    }
    let mut candidate = base;
    candidate.extend(rest.iter().cloned());
    while !candidate.is_empty() && !known.contains(&candidate) {
        candidate.pop();
    }
    Some(candidate)
}

fn graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut files = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let known: BTreeSet<Module> = files.iter().map(|f| module_of(src, f)).collect();
    let mut edges = BTreeMap::new();
    for file in &files {
        let from = module_of(src, file);
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        let mut to = BTreeSet::new();
        for path in paths_in(&code) {
            let Some(t) = target(&from, &path, &known) else {
                continue;
            };
            // Itself, or an ancestor (a child uses what its parent declares).
            if from.starts_with(&t) {
                continue;
            }
            to.insert(t);
        }
        edges.insert(from, to);
    }
    edges
}

/// The strongly connected components of more than one module (Tarjan).
fn circles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on_stack: BTreeSet<&'a Module>,
        found: Vec<Vec<Module>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a Module) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.edges.get(v).into_iter().flatten() {
                let Some((w, _)) = self.edges.get_key_value(w) else {
                    continue;
                };
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

#[test]
fn the_crate_has_no_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = graph(&src);
    assert!(
        edges.len() > 50,
        "the walk found only {} modules",
        edges.len()
    );
    let found = circles(&edges);
    let named: Vec<String> = found
        .iter()
        .map(|c| {
            c.iter()
                .map(|m| m.join("::"))
                .collect::<Vec<_>>()
                .join(" ↔ ")
        })
        .collect();
    assert!(named.is_empty(), "import circles:\n{}", named.join("\n"));
}

/// The front ends sit side by side: the MCP server (`mcp`) reaches the operations through
/// `ops` — importing only `ops`, `view`, `state`, `sys`, `core` and `error` — and never
/// the command line (whose `mcp` command only starts it); nothing below them imports
/// either.
#[test]
fn the_mcp_server_imports_no_cli_and_nothing_below_imports_a_front_end() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = graph(&src);
    let top = |m: &Module| m.first().cloned().unwrap_or_default();
    assert!(edges.keys().any(|m| top(m) == "mcp"), "no mcp module found");
    let mut wrong = Vec::new();
    for (from, to) in &edges {
        for t in to {
            let (a, b) = (top(from), top(t));
            let front = |x: &str| x == "cli" || x == "mcp";
            let starts_the_server = a == "cli" && b == "mcp";
            if front(&b) && a != b && !a.is_empty() && !starts_the_server {
                wrong.push(format!("{} → {}", from.join("::"), t.join("::")));
            }
        }
    }
    // And it reaches git and the runs only through the operations.
    let allowed = ["mcp", "ops", "view", "state", "sys", "core", "error"];
    for (from, to) in edges.iter().filter(|(from, _)| top(from) == "mcp") {
        for t in to.iter().filter(|t| !allowed.contains(&top(t).as_str())) {
            wrong.push(format!("{} → {}", from.join("::"), t.join("::")));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_reader_sees_every_kind_of_import() {
    let code = code_of(
        "use crate::a::{b, c::{d as e, self}};\n\
         use super::f;\n\
         // use crate::commented;\n\
         fn g() { let s = \"crate::in_a_string\"; crate::h::i(); self::j::k(); }\n\
         #[cfg(test)]\nmod tests { use crate::only_in_tests; }",
    );
    let paths: BTreeSet<String> = paths_in(&code).iter().map(|p| p.join("::")).collect();
    for want in [
        "crate::a::b",
        "crate::a::c::d",
        "crate::a::c",
        "super::f",
        "crate::h::i",
        "self::j::k",
    ] {
        assert!(paths.contains(want), "{want} missing from {paths:?}");
    }
    for not in ["commented", "in_a_string", "only_in_tests"] {
        assert!(
            !paths.iter().any(|p| p.contains(not)),
            "{not} read in {paths:?}"
        );
    }

    // A circle of three and an acyclic pair; a child using its parent is no edge.
    let m = |s: &str| -> Module { split_path(s) };
    let mut edges = BTreeMap::new();
    edges.insert(m("a"), BTreeSet::from([m("b")]));
    edges.insert(m("b"), BTreeSet::from([m("c")]));
    edges.insert(m("c"), BTreeSet::from([m("a"), m("d")]));
    edges.insert(m("d"), BTreeSet::new());
    assert_eq!(circles(&edges), vec![vec![m("a"), m("b"), m("c")]]);

    let known = BTreeSet::from([m("run"), m("run::supervisor"), m("run::queue"), m("core")]);
    let from = m("run::supervisor");
    let to = |p: &str| target(&from, &split_path(p), &known);
    assert_eq!(to("super::queue::promote"), Some(m("run::queue")));
    assert_eq!(to("crate::core::x::Y"), Some(m("core")));
    assert_eq!(to("self::inner"), Some(m("run::supervisor")));
    assert_eq!(to("super::super::core"), Some(m("core")));
}
