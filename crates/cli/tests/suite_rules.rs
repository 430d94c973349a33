//! The suite's own rules, checked on its sources with a Rust parser (`syn`): every skip goes
//! through `tests-support/need.rs`, so it is logged, summarised by the README's test
//! command and a failure under CI (issue 36). Two rules, over every test file
//! (`crates/*/tests/**`) and every `#[cfg(test)]` module of `crates/*/src/**`:
//!
//! - no test prints its own skip message (`eprintln!("skipped: ...")`);
//! - a `return` from a `#[test]` function (not from a closure inside it) is guarded by
//!   need.rs: the `if` or `match` that leads to it, the `let ... else` it leaves, or an
//!   earlier statement of a block it is in calls `need::...` or a helper that does (found
//!   by name, to a fixed point). A bare predicate (`need::have`, `need::is_root`) is not a
//!   guard: it logs nothing.
//!
//! It does not judge whether a guarded return is right, only that it cannot be silent.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// need.rs's functions that report a skip (its predicates `have`, `is_root`, `ci` and
/// `which` do not).
const REPORTING: &[&str] = &["need", "skip", "environment", "unavailable"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// A source file: its test items (the whole file under `tests/`, the `#[cfg(test)]`
/// modules under `src/`) and every function in it (helpers may be anywhere).
struct Source {
    path: PathBuf,
    file: syn::File,
    whole_file_is_test: bool,
}

fn sources() -> Vec<Source> {
    let root = workspace();
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        rust_files(&krate.path().join("tests"), &mut files);
        rust_files(&krate.path().join("src"), &mut files);
    }
    rust_files(&root.join("tests-support"), &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|p| !p.ends_with("tests-support/need.rs"))
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let file = syn::parse_file(&text)
                .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
            let whole_file_is_test = path.components().any(|c| c.as_os_str() == "tests");
            Source {
                path,
                file,
                whole_file_is_test,
            }
        })
        .collect()
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

fn is_test_fn(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| a.path().is_ident("test"))
}

/// A call in an expression or statement.
struct Call {
    /// The last segment of the called path, or the method's name.
    name: String,
    /// The last two segments (`Cluster::new`), for a path of two or more.
    qualified: Option<String>,
    /// Called through a path with `need` in it (`need::skip`, `common::need::need`).
    via_need: bool,
    method: bool,
}

#[derive(Default)]
struct Calls(Vec<Call>);

impl<'a> Visit<'a> for Calls {
    fn visit_expr_call(&mut self, c: &'a syn::ExprCall) {
        if let syn::Expr::Path(p) = &*c.func {
            let segs: Vec<String> = p
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect();
            let n = segs.len();
            self.0.push(Call {
                name: segs[n - 1].clone(),
                qualified: (n > 1).then(|| format!("{}::{}", segs[n - 2], segs[n - 1])),
                via_need: n > 1 && segs[..n - 1].iter().any(|s| s == "need"),
                method: false,
            });
        }
        syn::visit::visit_expr_call(self, c);
    }
    fn visit_expr_method_call(&mut self, c: &'a syn::ExprMethodCall) {
        self.0.push(Call {
            name: c.method.to_string(),
            qualified: None,
            via_need: false,
            method: true,
        });
        syn::visit::visit_expr_method_call(self, c);
    }
}

/// The helpers that reach need.rs: free functions by name, associated functions as
/// `Type::name`, and method names that only gates carry.
#[derive(Default, Debug)]
struct Gates {
    keys: BTreeSet<String>,
    methods: BTreeSet<String>,
}

impl Gates {
    fn contains(&self, key: &str) -> bool {
        self.keys.contains(key) || self.keys.iter().any(|k| k.ends_with(&format!("::{key}")))
    }
}

/// Whether `calls` reach need.rs: a reporting function of need.rs (by path, or `need(...)`
/// imported by name), or a gate helper.
fn reaches_need(calls: &Calls, gates: &Gates) -> bool {
    calls.0.iter().any(|c| {
        if c.method {
            return gates.methods.contains(&c.name);
        }
        (REPORTING.contains(&c.name.as_str()) && c.via_need)
            || c.name == "need"
            || match &c.qualified {
                // `Self::name` inside an impl: any type's associated `name`.
                Some(q) if q.starts_with("Self::") => gates.contains(&c.name),
                Some(q) => gates.keys.contains(q) || gates.keys.contains(&c.name),
                None => gates.keys.contains(&c.name),
            }
    })
}

fn calls_of(f: impl FnOnce(&mut Calls)) -> Calls {
    let mut c = Calls::default();
    f(&mut c);
    c
}

/// Every function (free, in an impl, nested in a module) with its key (`name`, or
/// `Type::name` in an impl), its bare name and its body.
#[derive(Default)]
struct Functions {
    self_ty: Option<String>,
    found: Vec<(String, String, syn::Block)>,
}

impl<'a> Visit<'a> for Functions {
    fn visit_item_impl(&mut self, i: &'a syn::ItemImpl) {
        let was = self.self_ty.take();
        if let syn::Type::Path(p) = &*i.self_ty {
            self.self_ty = p.path.segments.last().map(|s| s.ident.to_string());
        }
        syn::visit::visit_item_impl(self, i);
        self.self_ty = was;
    }
    fn visit_item_fn(&mut self, f: &'a syn::ItemFn) {
        let name = f.sig.ident.to_string();
        self.found.push((name.clone(), name, (*f.block).clone()));
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_impl_item_fn(&mut self, f: &'a syn::ImplItemFn) {
        let name = f.sig.ident.to_string();
        let key = match &self.self_ty {
            Some(t) => format!("{t}::{name}"),
            None => name.clone(),
        };
        self.found.push((key, name, f.block.clone()));
        syn::visit::visit_impl_item_fn(self, f);
    }
}

/// Helpers that reach need.rs, to a fixed point over every source file. A method name
/// counts only when no function of that name is not a gate.
fn gates(sources: &[Source]) -> Gates {
    let mut fns = Functions::default();
    for s in sources {
        fns.visit_file(&s.file);
    }
    let mut gates = Gates::default();
    loop {
        let before = gates.keys.len();
        for (key, name, body) in &fns.found {
            if REPORTING.contains(&name.as_str()) {
                continue; // same names as need.rs's, elsewhere: not a guard by name alone
            }
            if reaches_need(&calls_of(|c| c.visit_block(body)), &gates) {
                gates.keys.insert(key.clone());
            }
        }
        gates.methods = fns
            .found
            .iter()
            .filter(|(k, _, _)| k.contains("::") && gates.keys.contains(k))
            .map(|(_, n, _)| n.clone())
            .filter(|n| {
                fns.found
                    .iter()
                    .all(|(k, m, _)| m != n || gates.keys.contains(k))
            })
            .collect();
        if gates.keys.len() == before {
            return gates;
        }
    }
}

/// Early returns of one test function that nothing in need.rs guards.
struct Returns<'g> {
    gates: &'g Gates,
    guarded: Vec<bool>,
    unguarded: usize,
}

/// need.rs's predicates, which log nothing: a condition that uses one beside a guard
/// (`!runnable(t) || !have("mkfs.ext4")`) can still return silently.
const PREDICATES: &[&str] = &["have", "is_root", "which"];

impl Returns<'_> {
    fn guard(&self, calls: Calls) -> bool {
        let bare = calls
            .0
            .iter()
            .any(|c| !c.method && PREDICATES.contains(&c.name.as_str()));
        reaches_need(&calls, self.gates) && !bare
    }
}

impl<'a> Visit<'a> for Returns<'_> {
    fn visit_expr_return(&mut self, r: &'a syn::ExprReturn) {
        if !self.guarded.iter().any(|g| *g) {
            self.unguarded += 1;
        }
        syn::visit::visit_expr_return(self, r);
    }
    fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
    fn visit_item(&mut self, _: &'a syn::Item) {}
    fn visit_expr_if(&mut self, e: &'a syn::ExprIf) {
        self.visit_expr(&e.cond);
        let g = self.guard(calls_of(|c| c.visit_expr(&e.cond)));
        self.guarded.push(g);
        self.visit_block(&e.then_branch);
        if let Some((_, other)) = &e.else_branch {
            self.visit_expr(other);
        }
        self.guarded.pop();
    }
    fn visit_expr_match(&mut self, m: &'a syn::ExprMatch) {
        self.visit_expr(&m.expr);
        let g = self.guard(calls_of(|c| c.visit_expr(&m.expr)));
        self.guarded.push(g);
        for arm in &m.arms {
            self.visit_arm(arm);
        }
        self.guarded.pop();
    }
    fn visit_local(&mut self, l: &'a syn::Local) {
        if let Some(init) = &l.init {
            self.visit_expr(&init.expr);
            if let Some((_, diverge)) = &init.diverge {
                let g = self.guard(calls_of(|c| c.visit_expr(&init.expr)));
                self.guarded.push(g);
                self.visit_expr(diverge);
                self.guarded.pop();
            }
        }
    }
    fn visit_block(&mut self, b: &'a syn::Block) {
        let depth = self.guarded.len();
        for stmt in &b.stmts {
            self.visit_stmt(stmt);
            // A later return in this block comes after this statement's call, when the
            // statement is the call itself (`need::skip(..);`): a call nested in an
            // earlier `if` guards only that `if`'s own returns.
            if let syn::Stmt::Expr(e @ (syn::Expr::Call(_) | syn::Expr::MethodCall(_)), _) = stmt {
                let g = self.guard(calls_of(|c| c.visit_expr(e)));
                self.guarded.push(g);
            }
        }
        self.guarded.truncate(depth);
    }
}

/// Test functions in test code: (name, body).
#[derive(Default)]
struct Tests {
    in_test: bool,
    found: Vec<(String, syn::Block)>,
    skip_prints: Vec<String>,
}

impl<'a> Visit<'a> for Tests {
    fn visit_item_mod(&mut self, m: &'a syn::ItemMod) {
        let was = self.in_test;
        self.in_test |= is_cfg_test(&m.attrs);
        syn::visit::visit_item_mod(self, m);
        self.in_test = was;
    }
    fn visit_item_fn(&mut self, f: &'a syn::ItemFn) {
        if self.in_test && is_test_fn(&f.attrs) {
            self.found
                .push((f.sig.ident.to_string(), (*f.block).clone()));
        }
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_macro(&mut self, m: &'a syn::Macro) {
        let name = m.path.segments.last().map(|s| s.ident.to_string());
        if self.in_test
            && matches!(name.as_deref(), Some("eprintln" | "println"))
            && m.tokens.to_string().to_lowercase().contains("skip")
        {
            self.skip_prints.push(m.tokens.to_string());
        }
    }
}

fn tests_of(s: &Source) -> Tests {
    let mut t = Tests {
        in_test: s.whole_file_is_test,
        ..Tests::default()
    };
    t.visit_file(&s.file);
    t
}

#[test]
fn every_early_return_of_a_test_goes_through_need() {
    let sources = sources();
    let gates = gates(&sources);
    // The known gates are found: the rule is not vacuous.
    for helper in ["browser_ready", "runnable", "Cluster::start"] {
        assert!(
            gates.contains(helper),
            "{helper} not found as a gate: {gates:?}"
        );
    }
    let mut bad = Vec::new();
    let mut tests = 0;
    for s in &sources {
        for (name, body) in tests_of(s).found {
            tests += 1;
            let mut r = Returns {
                gates: &gates,
                guarded: Vec::new(),
                unguarded: 0,
            };
            r.visit_block(&body);
            if r.unguarded > 0 {
                bad.push(format!("{}: {name}", s.path.display()));
            }
        }
    }
    assert!(tests > 500, "only {tests} tests found: the walk is broken");
    assert!(
        bad.is_empty(),
        "tests that return early without going through tests-support/need.rs:\n  {}",
        bad.join("\n  ")
    );
}

#[test]
fn no_test_prints_its_own_skip() {
    let mut bad = Vec::new();
    for s in sources() {
        for print in tests_of(&s).skip_prints {
            bad.push(format!("{}: {print}", s.path.display()));
        }
    }
    assert!(
        bad.is_empty(),
        "skip messages printed around tests-support/need.rs:\n  {}",
        bad.join("\n  ")
    );
}

/// The rules catch what they are for: a silent skip in a snippet is found, a guarded one
/// is not.
#[test]
fn the_rules_catch_a_silent_skip_and_pass_a_guarded_one() {
    let gates = Gates {
        keys: ["runnable".to_string()].into(),
        methods: BTreeSet::new(),
    };
    let unguarded = |src: &str| {
        let f: syn::ItemFn = syn::parse_str(src).unwrap();
        let mut r = Returns {
            gates: &gates,
            guarded: Vec::new(),
            unguarded: 0,
        };
        r.visit_block(&f.block);
        r.unguarded
    };
    assert_eq!(unguarded("fn t() { if !have(\"x\") { return; } }"), 1);
    assert_eq!(
        unguarded("fn t() { let Ok(c) = std::env::var(\"X\") else { return; }; }"),
        1
    );
    assert_eq!(unguarded("fn t() { if !need::have(\"x\") { return; } }"), 1);
    assert_eq!(
        unguarded("fn t() { if !need::need(\"t\", &[\"x\"]) { return; } }"),
        0
    );
    assert_eq!(unguarded("fn t() { if !runnable(\"t\") { return; } }"), 0);
    assert_eq!(
        unguarded("fn t() { if !runnable(\"t\") || !have(\"mkfs.ext4\") { return; } }"),
        1,
        "a bare predicate beside a guard"
    );
    assert_eq!(
        unguarded("fn t() { let Some(b) = find() else { need::skip(\"x\", \"t\"); return; }; }"),
        0
    );
    assert_eq!(
        unguarded("fn t() { let v: Vec<u8> = (0..3).filter_map(|x| { if x > 1 { return None; } Some(x) }).collect(); }"),
        0,
        "a closure's return is not the test's"
    );
    assert_eq!(
        unguarded("fn t() { if !need::need(\"t\", &[\"x\"]) { return; } let Ok(c) = std::env::var(\"X\") else { return; }; }"),
        1,
        "a guard earlier in the block covers only its own return"
    );
    assert_eq!(
        unguarded("fn t() { let Ok(c) = std::env::var(\"X\") else { need::unavailable(\"t\", \"x\"); return; }; }"),
        0
    );
    let mut t = Tests {
        in_test: true,
        ..Tests::default()
    };
    t.visit_file(&syn::parse_str("fn f() { eprintln!(\"skipped: no fio\"); }").unwrap());
    assert_eq!(t.skip_prints.len(), 1);
}
