//! The house rules of production code (issue 37), checked on its sources with a Rust parser
//! (`syn`). Production code is every crate's modules as the compiler sees them: from
//! `src/lib.rs` or `src/main.rs` through each `mod NAME;`, leaving out `#[cfg(test)]` items
//! and the files that only they declare. Three rules:
//!
//! - no function (free, in an impl, or a trait's with a body) is longer than
//!   `MAX_FN_LINES` lines, from its `fn` to its closing brace, comments included: a longer
//!   one names its phases as functions (shared/STYLE.md);
//! - no circle of imports among the modules of a crate. A module imports another when it
//!   names it, or an item in it, by a `crate::` or `super::` path, in a `use`, in code or
//!   in a macro's arguments. `crate::a::b::Item` is an edge to module `a::b` when that
//!   module exists, else to `a`; a name a module re-exports (`pub use`) is followed to the
//!   module that defines it. A module's own children named by a relative path (`mod.rs`'s
//!   `child::Item`) and the `mod` declarations are the tree of modules, not imports;
//! - in the binary (`crates/cli`), a subcommand's module (`cmd::NAME`, and any module
//!   under it) imports no other subcommand's, and only the command line (`cli`) imports
//!   a subcommand's: what two commands share lives in a module that is not a command
//!   (shared/STYLE.md, "Commands are wiring").
//!
//! Each rule is also run on small inline sources, a passing and a failing case, so a rule
//! that stopped seeing anything fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// The longest a production function may be, in lines.
const MAX_FN_LINES: usize = 120;

/// Crates (their directories under `crates/`) whose import circles are not checked yet:
/// issue 37 restructures them and removes them from this list. A crate listed here that
/// has no circle fails the test, so the list only shrinks.
const CIRCLES_NOT_YET_CHECKED: &[&str] = &[];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_path_buf()
}

/// One module file of a crate.
struct Module {
    /// From the crate root: `["fio", "map"]`; empty for the root.
    path: Vec<String>,
    /// The file, as messages name it.
    file: String,
    ast: syn::File,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        (a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test")))
            || a.path().is_ident("test")
    })
}

fn parse(file: &Path) -> syn::File {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    syn::parse_file(&text).unwrap_or_else(|e| panic!("{} does not parse: {e}", file.display()))
}

/// The modules of the crate rooted at `file`, walked through its `mod NAME;` items (those
/// under `#[cfg(test)]` go to `test_files`).
fn walk(
    file: &Path,
    path: Vec<String>,
    out: &mut Vec<(Vec<String>, PathBuf, syn::File)>,
    test_files: &mut Vec<PathBuf>,
) {
    let ast = parse(file);
    let stem = file.file_stem().unwrap().to_string_lossy().to_string();
    let parent = file.parent().unwrap();
    let dir = match stem.as_str() {
        "lib" | "main" | "mod" => parent.to_path_buf(),
        _ => parent.join(&stem),
    };
    for item in &ast.items {
        let syn::Item::Mod(m) = item else { continue };
        if m.content.is_some() {
            continue;
        }
        let name = m.ident.to_string();
        let at_path = m.attrs.iter().find_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(parent.join(s.value())),
                _ => None,
            },
            _ => None,
        });
        let child = at_path.unwrap_or_else(|| {
            let flat = dir.join(format!("{name}.rs"));
            if flat.is_file() {
                flat
            } else {
                dir.join(&name).join("mod.rs")
            }
        });
        if is_cfg_test(&m.attrs) {
            test_files.push(child);
            continue;
        }
        assert!(child.is_file(), "{}: mod {name}: no file", file.display());
        let mut p = path.clone();
        p.push(name);
        walk(&child, p, out, test_files);
    }
    out.push((path, file.to_path_buf(), ast));
}

/// A crate's production modules, and the `.rs` files under its `src/` that are no module
/// of it (neither production nor test).
struct Crate {
    name: String,
    modules: Vec<Module>,
    strays: Vec<PathBuf>,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn crates() -> Vec<Crate> {
    crates_named(|_| true)
}

/// The crates whose directory name under `crates/` `keep` accepts.
fn crates_named(keep: impl Fn(&str) -> bool) -> Vec<Crate> {
    let root = workspace();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("src").is_dir() && keep(&p.file_name().unwrap().to_string_lossy()))
        .collect();
    dirs.sort();
    dirs.into_iter()
        .map(|dir| {
            let src = dir.join("src");
            let mut found = Vec::new();
            let mut test_files = Vec::new();
            for root_file in ["lib.rs", "main.rs"] {
                if src.join(root_file).is_file() {
                    walk(
                        &src.join(root_file),
                        Vec::new(),
                        &mut found,
                        &mut test_files,
                    );
                }
            }
            let mut all = Vec::new();
            rust_files(&src, &mut all);
            let known: BTreeSet<PathBuf> = found
                .iter()
                .map(|(_, f, _)| f.clone())
                .chain(test_files.iter().cloned())
                .filter_map(|f| f.canonicalize().ok())
                .collect();
            let strays = all
                .into_iter()
                .filter(|f| !known.contains(&f.canonicalize().unwrap()))
                .collect();
            let modules = found
                .into_iter()
                .map(|(path, file, ast)| Module {
                    path,
                    file: file
                        .strip_prefix(&root)
                        .unwrap_or(&file)
                        .display()
                        .to_string(),
                    ast,
                })
                .collect();
            Crate {
                name: dir.file_name().unwrap().to_string_lossy().to_string(),
                modules,
                strays,
            }
        })
        .collect()
}

// ---- function length ----

/// Production functions longer than the limit, as `FILE:LINE: NAME is N lines`.
struct LongFns<'a> {
    file: &'a str,
    limit: usize,
    owner: Option<String>,
    found: Vec<String>,
}

impl LongFns<'_> {
    fn check(&mut self, fn_token: &syn::token::Fn, body: &syn::Block, name: &syn::Ident) {
        let start = fn_token.span.start().line;
        let end = body.brace_token.span.close().start().line;
        let lines = end - start + 1;
        if lines > self.limit {
            let name = match &self.owner {
                Some(o) => format!("{o}::{name}"),
                None => name.to_string(),
            };
            self.found
                .push(format!("{}:{start}: {name} is {lines} lines", self.file));
        }
    }
}

/// The type or trait an impl is of, by its last path segment.
fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

impl<'a> Visit<'a> for LongFns<'_> {
    fn visit_item_mod(&mut self, m: &'a syn::ItemMod) {
        if !is_cfg_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'a syn::ItemFn) {
        if is_cfg_test(&f.attrs) {
            return;
        }
        let owner = self.owner.take();
        self.check(&f.sig.fn_token, &f.block, &f.sig.ident);
        syn::visit::visit_item_fn(self, f);
        self.owner = owner;
    }
    fn visit_item_impl(&mut self, i: &'a syn::ItemImpl) {
        if is_cfg_test(&i.attrs) {
            return;
        }
        let owner = std::mem::replace(&mut self.owner, type_name(&i.self_ty));
        syn::visit::visit_item_impl(self, i);
        self.owner = owner;
    }
    fn visit_impl_item_fn(&mut self, f: &'a syn::ImplItemFn) {
        if is_cfg_test(&f.attrs) {
            return;
        }
        self.check(&f.sig.fn_token, &f.block, &f.sig.ident);
        syn::visit::visit_impl_item_fn(self, f);
    }
    fn visit_item_trait(&mut self, t: &'a syn::ItemTrait) {
        if is_cfg_test(&t.attrs) {
            return;
        }
        let owner = self.owner.replace(t.ident.to_string());
        syn::visit::visit_item_trait(self, t);
        self.owner = owner;
    }
    fn visit_trait_item_fn(&mut self, f: &'a syn::TraitItemFn) {
        if let Some(body) = &f.default {
            if !is_cfg_test(&f.attrs) {
                self.check(&f.sig.fn_token, body, &f.sig.ident);
            }
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

fn long_functions(file: &str, ast: &syn::File, limit: usize) -> Vec<String> {
    let mut v = LongFns {
        file,
        limit,
        owner: None,
        found: Vec::new(),
    };
    v.visit_file(ast);
    v.found
}

// ---- import graph ----

/// The attributes of an item, for the kinds that carry `#[cfg(test)]` in practice.
fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// The paths a `use` tree brings in, each with the name it binds (None for a glob).
fn use_paths(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let named = |prefix: &[String], ident: &syn::Ident, bound: &syn::Ident| {
        let mut p = prefix.to_vec();
        if ident != "self" {
            p.push(ident.to_string());
        }
        (p, Some(bound.to_string()))
    };
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => out.push(named(prefix, &n.ident, &n.ident)),
        syn::UseTree::Rename(r) => out.push(named(prefix, &r.ident, &r.rename)),
        syn::UseTree::Glob(_) => out.push((prefix.clone(), None)),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix, out);
            }
        }
    }
}

/// `crate::…` and `super::…` paths in a macro's or attribute's tokens.
fn token_paths(tokens: TokenStream, scope: &[String], out: &mut Vec<(Vec<String>, Vec<String>)>) {
    let tts: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tts.len() {
        match &tts[i] {
            TokenTree::Group(g) => token_paths(g.stream(), scope, out),
            TokenTree::Ident(id) if id == "crate" || id == "super" => {
                let mut segs = vec![id.to_string()];
                while let (
                    Some(TokenTree::Punct(a)),
                    Some(TokenTree::Punct(b)),
                    Some(TokenTree::Ident(n)),
                ) = (tts.get(i + 1), tts.get(i + 2), tts.get(i + 3))
                {
                    if a.as_char() != ':' || b.as_char() != ':' {
                        break;
                    }
                    segs.push(n.to_string());
                    i += 3;
                }
                if segs.len() > 1 {
                    out.push((scope.to_vec(), segs));
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// What one module file names and what it offers: the `crate::`/`super::` paths it uses
/// (each with the module scope it is written in, for `super`), the items it defines and
/// the names it re-exports.
#[derive(Default)]
struct Names {
    scope: Vec<String>,
    used: Vec<(Vec<String>, Vec<String>)>,
    defined: BTreeSet<String>,
    /// `pub use`: the bound name (None: a glob) and the path as written, in `scope`.
    reexports: Vec<(Option<String>, Vec<String>)>,
}

impl<'a> Visit<'a> for Names {
    fn visit_item(&mut self, item: &'a syn::Item) {
        if !is_cfg_test(item_attrs(item)) {
            syn::visit::visit_item(self, item);
        }
    }
    fn visit_impl_item(&mut self, item: &'a syn::ImplItem) {
        let attrs: &[syn::Attribute] = match item {
            syn::ImplItem::Fn(f) => &f.attrs,
            syn::ImplItem::Const(c) => &c.attrs,
            _ => &[],
        };
        if !is_cfg_test(attrs) {
            syn::visit::visit_impl_item(self, item);
        }
    }
    fn visit_item_mod(&mut self, m: &'a syn::ItemMod) {
        self.scope.push(m.ident.to_string());
        syn::visit::visit_item_mod(self, m);
        self.scope.pop();
    }
    fn visit_item_use(&mut self, u: &'a syn::ItemUse) {
        let mut paths = Vec::new();
        use_paths(&u.tree, &mut Vec::new(), &mut paths);
        for (path, bound) in paths {
            if matches!(path.first().map(String::as_str), Some("crate" | "super")) {
                self.used.push((self.scope.clone(), path.clone()));
            }
            if !matches!(u.vis, syn::Visibility::Inherited) && self.scope.len() == 1 {
                self.reexports.push((bound, path));
            }
        }
    }
    fn visit_path(&mut self, p: &'a syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if segs.len() > 1 && matches!(segs[0].as_str(), "crate" | "super") {
            self.used.push((self.scope.clone(), segs));
        }
        syn::visit::visit_path(self, p);
    }
    fn visit_macro(&mut self, m: &'a syn::Macro) {
        token_paths(m.tokens.clone(), &self.scope, &mut self.used);
        syn::visit::visit_macro(self, m);
    }
    fn visit_attribute(&mut self, a: &'a syn::Attribute) {
        if let syn::Meta::List(l) = &a.meta {
            token_paths(l.tokens.clone(), &self.scope, &mut self.used);
        }
        syn::visit::visit_attribute(self, a);
    }
    // `pub(in crate::a)` limits who sees an item; it imports nothing.
    fn visit_visibility(&mut self, _: &'a syn::Visibility) {}
}

fn names_of(m: &Module) -> Names {
    // The file's own scope is its module path; an inline module adds its name.
    let mut n = Names {
        scope: vec![String::new()],
        ..Names::default()
    };
    for item in &m.ast.items {
        if is_cfg_test(item_attrs(item)) {
            continue;
        }
        let ident = match item {
            syn::Item::Const(i) => Some(&i.ident),
            syn::Item::Enum(i) => Some(&i.ident),
            syn::Item::Fn(i) => Some(&i.sig.ident),
            syn::Item::Macro(i) => i.ident.as_ref(),
            syn::Item::Mod(i) => Some(&i.ident),
            syn::Item::Static(i) => Some(&i.ident),
            syn::Item::Struct(i) => Some(&i.ident),
            syn::Item::Trait(i) => Some(&i.ident),
            syn::Item::Type(i) => Some(&i.ident),
            syn::Item::Union(i) => Some(&i.ident),
            _ => None,
        };
        n.defined.extend(ident.map(|i| i.to_string()));
    }
    n.visit_file(&m.ast);
    n
}

/// A crate's import graph: which module names which, and by what.
struct Graph {
    /// Module path → its file.
    files: BTreeMap<Vec<String>, String>,
    /// (from, to) → the names used.
    edges: BTreeMap<(Vec<String>, Vec<String>), BTreeSet<String>>,
}

/// Resolves paths among a crate's modules, following re-exports.
struct Resolver<'a> {
    modules: BTreeMap<Vec<String>, &'a Names>,
}

impl Resolver<'_> {
    /// `written` (starting `crate`, `super`, `self` or a child module's name), in module
    /// `at`, as a path from the crate root; None for a path out of the crate.
    fn absolute(&self, at: &[String], written: &[String]) -> Option<Vec<String>> {
        let mut base = at.to_vec();
        let mut rest = written;
        match rest.first().map(String::as_str) {
            Some("crate") => {
                base.clear();
                rest = &rest[1..];
            }
            Some("self") => rest = &rest[1..],
            Some("super") => {
                while rest.first().map(String::as_str) == Some("super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
            }
            Some(first) => {
                let mut child = at.to_vec();
                child.push(first.to_string());
                if !self.modules.contains_key(&child) {
                    return None;
                }
            }
            None => return None,
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The module that defines what `path` (from the crate root) names.
    fn module_of(&self, path: &[String], hops: usize) -> Vec<String> {
        let mut k = 0;
        while k < path.len() && self.modules.contains_key(&path[..=k]) {
            k += 1;
        }
        let module = path[..k].to_vec();
        if k == path.len() || hops > 16 {
            return module;
        }
        let name = &path[k];
        let names = self.modules[&module];
        if names.defined.contains(name) {
            return module;
        }
        for (bound, written) in &names.reexports {
            let Some(target) = self.absolute(&module, written) else {
                continue;
            };
            let mut next = target;
            match bound {
                Some(b) if b == name => {}
                None if self
                    .modules
                    .get(&next)
                    .is_some_and(|m| m.defined.contains(name)) =>
                {
                    next.push(name.clone());
                }
                _ => continue,
            }
            next.extend(path[k + 1..].iter().cloned());
            return self.module_of(&next, hops + 1);
        }
        module
    }
}

fn graph(modules: &[Module]) -> Graph {
    let names: Vec<Names> = modules.iter().map(names_of).collect();
    let resolver = Resolver {
        modules: modules
            .iter()
            .zip(&names)
            .map(|(m, n)| (m.path.clone(), n))
            .collect(),
    };
    let mut g = Graph {
        files: modules
            .iter()
            .map(|m| (m.path.clone(), m.file.clone()))
            .collect(),
        edges: BTreeMap::new(),
    };
    for (m, n) in modules.iter().zip(&names) {
        for (scope, written) in &n.used {
            // The scope's first entry stands for the file's own module.
            let mut at = m.path.clone();
            at.extend(scope[1..].iter().cloned());
            let Some(path) = resolver.absolute(&at, written) else {
                continue;
            };
            let to = resolver.module_of(&path, 0);
            // The name the path takes from its module, as written (`FleetError` of
            // `crate::FleetError::Input`); a path to a module itself, its name.
            let modules = (0..path.len())
                .take_while(|&k| resolver.modules.contains_key(&path[..=k]))
                .count();
            let name = path.get(modules).or(path.last()).or(written.last());
            if to != m.path {
                g.edges
                    .entry((m.path.clone(), to))
                    .or_default()
                    .insert(name.unwrap().clone());
            }
        }
    }
    g
}

/// Every circle of the graph (its strongly connected components of more than one
/// module), each as the lines `FILE -> FILE: names` of its edges.
fn circles(g: &Graph) -> Vec<Vec<String>> {
    let nodes: Vec<&Vec<String>> = g.files.keys().collect();
    let index: BTreeMap<&Vec<String>, usize> =
        nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (from, to) in g.edges.keys() {
        if let (Some(&a), Some(&b)) = (index.get(from), index.get(to)) {
            next[a].push(b);
        }
    }
    // Tarjan's strongly connected components.
    struct State {
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        counter: usize,
        found: Vec<Vec<usize>>,
    }
    fn connect(v: usize, next: &[Vec<usize>], s: &mut State) {
        s.index[v] = Some(s.counter);
        s.low[v] = s.counter;
        s.counter += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &next[v] {
            match s.index[w] {
                None => {
                    connect(w, next, s);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(i) if s.on_stack[w] => s.low[v] = s.low[v].min(i),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        index: vec![None; nodes.len()],
        low: vec![0; nodes.len()],
        on_stack: vec![false; nodes.len()],
        stack: Vec::new(),
        counter: 0,
        found: Vec::new(),
    };
    for v in 0..nodes.len() {
        if s.index[v].is_none() {
            connect(v, &next, &mut s);
        }
    }
    s.found
        .iter()
        .map(|component| {
            let inside: BTreeSet<&Vec<String>> = component.iter().map(|&i| nodes[i]).collect();
            g.edges
                .iter()
                .filter(|((a, b), _)| inside.contains(a) && inside.contains(b))
                .map(|((a, b), used)| {
                    let used: Vec<&str> = used.iter().map(String::as_str).collect();
                    format!("{} -> {}: {}", g.files[a], g.files[b], used.join(", "))
                })
                .collect()
        })
        .collect()
}

// ---- commands ----

/// The folder of the binary's subcommands, one module (or folder) each.
const COMMANDS: &str = "cmd";

/// The module that parses the command line and so names every subcommand's flags.
const COMMAND_LINE: &str = "cli";

/// Imports that cross between subcommands, or into one from a module other than the
/// command line: `FROM -> TO: names`.
fn command_crossings(g: &Graph) -> Vec<String> {
    let command = |m: &[String]| (m.len() > 1 && m[0] == COMMANDS).then(|| m[1].clone());
    g.edges
        .iter()
        .filter(|((from, to), _)| match (command(from), command(to)) {
            (_, None) => false,
            (Some(a), Some(b)) => a != b,
            (None, Some(_)) => from.as_slice() != [COMMAND_LINE.to_string()],
        })
        .map(|((a, b), used)| {
            let used: Vec<&str> = used.iter().map(String::as_str).collect();
            format!("{} -> {}: {}", g.files[a], g.files[b], used.join(", "))
        })
        .collect()
}

// ---- the rules on the tree ----

#[test]
fn no_production_function_is_longer_than_120_lines() {
    let crates = crates();
    let mut long = Vec::new();
    let mut modules = 0;
    for c in &crates {
        assert!(
            c.strays.is_empty(),
            "files under crates/{}/src that no `mod` declares (the walk would miss them): {:?}",
            c.name,
            c.strays
        );
        for m in &c.modules {
            modules += 1;
            long.extend(long_functions(&m.file, &m.ast, MAX_FN_LINES));
        }
    }
    assert!(
        modules > 100,
        "only {modules} modules found: the walk is broken"
    );
    assert!(
        long.is_empty(),
        "production functions longer than {MAX_FN_LINES} lines (name their phases as functions):\n  {}",
        long.join("\n  ")
    );
}

#[test]
fn no_crate_has_a_circle_of_imports() {
    let mut bad = Vec::new();
    let mut checked = 0;
    for c in crates() {
        let found = circles(&graph(&c.modules));
        if CIRCLES_NOT_YET_CHECKED.contains(&c.name.as_str()) {
            assert!(
                !found.is_empty(),
                "crates/{} has no circle of imports now: take it off CIRCLES_NOT_YET_CHECKED",
                c.name
            );
            continue;
        }
        checked += 1;
        for circle in found {
            bad.push(format!("crates/{}:\n    {}", c.name, circle.join("\n    ")));
        }
    }
    assert!(checked >= 4, "only {checked} crates checked");
    assert!(
        bad.is_empty(),
        "circles of imports (each edge: the names one module takes from the other):\n  {}",
        bad.join("\n  ")
    );
}

#[test]
fn no_command_imports_another() {
    let cli = crates_named(|name| name == "cli").remove(0);
    let g = graph(&cli.modules);
    let commands = g
        .files
        .keys()
        .filter(|m| m.len() == 2 && m[0] == COMMANDS)
        .count();
    assert!(commands >= 10, "only {commands} command modules found");
    let crossings = command_crossings(&g);
    assert!(
        crossings.is_empty(),
        "command modules imported by another command or a library module (move what they share out of cmd/):\n  {}",
        crossings.join("\n  ")
    );
}

// ---- the rules on inline sources ----

fn module(path: &[&str], source: &str) -> Module {
    Module {
        path: path.iter().map(|s| s.to_string()).collect(),
        file: if path.is_empty() {
            "lib.rs".into()
        } else {
            format!("{}.rs", path.join("/"))
        },
        ast: syn::parse_file(source).unwrap(),
    }
}

/// A function of `lines` lines, from `fn` to its closing brace.
fn function(head: &str, lines: usize) -> String {
    let body: String = (0..lines - 2)
        .map(|i| format!("    let _x{i} = {i};\n"))
        .collect();
    format!("{head} {{\n{body}}}\n")
}

#[test]
fn a_long_function_is_named_and_one_at_the_limit_passes() {
    let at_limit = function("fn fits()", MAX_FN_LINES);
    let over = function("fn too_long()", MAX_FN_LINES + 1);
    let source = format!(
        "{at_limit}\nstruct S;\nimpl S {{\n{}}}\ntrait T {{\n{}}}\n#[cfg(test)]\nmod tests {{\n{over}}}\n",
        function("pub fn method(&self)", MAX_FN_LINES + 1),
        function("fn provided(&self)", MAX_FN_LINES + 2),
    );
    let m = module(&["a"], &source);
    let found = long_functions(&m.file, &m.ast, MAX_FN_LINES);
    let start = at_limit.lines().count() + 4;
    assert_eq!(
        found,
        vec![
            format!("a.rs:{start}: S::method is {} lines", MAX_FN_LINES + 1),
            format!(
                "a.rs:{}: T::provided is {} lines",
                start + MAX_FN_LINES + 3,
                MAX_FN_LINES + 2
            ),
        ],
        "the test module's function is not production code"
    );
    let m = module(&[], &over);
    assert_eq!(long_functions(&m.file, &m.ast, MAX_FN_LINES).len(), 1);
}

#[test]
fn a_circle_is_named_and_a_tree_passes() {
    let root = module(&[], "pub mod a;\npub mod b;\npub use b::B;\n");
    // `a` takes B through the root's re-export; `b`'s test module takes from `a`.
    let tree = [
        root,
        module(
            &["a"],
            "use crate::B;\npub const NAME: &str = \"a\";\npub struct A(B);\n",
        ),
        module(
            &["b"],
            "pub struct B;\n#[cfg(test)]\nmod tests { use crate::a::A; }\n",
        ),
    ];
    assert_eq!(circles(&graph(&tree)), Vec::<Vec<String>>::new());
    let g = graph(&tree);
    assert_eq!(
        g.edges.keys().collect::<Vec<_>>(),
        vec![&(vec!["a".to_string()], vec!["b".to_string()])],
        "a -> b through the re-export, and nothing from b's tests"
    );

    // `b` names a's constant inside a macro's arguments: a circle.
    let circle = [
        module(&[], "pub mod a;\npub mod b;\npub use b::B;\n"),
        module(
            &["a"],
            "use crate::B;\npub const NAME: &str = \"a\";\npub struct A(B);\n",
        ),
        module(
            &["b"],
            "pub struct B;\npub fn f() -> String { format!(\"{}\", crate::a::NAME) }\n",
        ),
    ];
    assert_eq!(
        circles(&graph(&circle)),
        vec![vec![
            "a.rs -> b.rs: B".to_string(),
            "b.rs -> a.rs: NAME".to_string()
        ]]
    );

    // Children name their parent and each other by `super::`: a tree, until the parent
    // names one of them back (`super::p::d` from `p` is `p::d`).
    let mut nested = [
        module(&[], "pub mod p;\n"),
        module(&["p"], "pub mod c;\npub mod d;\npub struct E;\n"),
        module(&["p", "c"], "use super::E;\npub fn h() {}\n"),
        module(
            &["p", "d"],
            "use super::super::p::c::h;\npub fn g() { h(); }\n",
        ),
    ];
    assert_eq!(circles(&graph(&nested)), Vec::<Vec<String>>::new());
    nested[1] = module(
        &["p"],
        "pub mod c;\npub mod d;\npub struct E;\nfn f() { super::p::d::g(); }\n",
    );
    assert_eq!(
        circles(&graph(&nested)),
        vec![vec![
            "p.rs -> p/d.rs: g".to_string(),
            "p/c.rs -> p.rs: E".to_string(),
            "p/d.rs -> p/c.rs: h".to_string(),
        ]]
    );
}

#[test]
fn a_command_importing_another_is_named() {
    let root = module(&[], "mod cli;\nmod cmd;\nmod run;\n");
    let cmd = module(&["cmd"], "pub mod a;\npub mod b;\n");
    let cli = module(
        &["cli"],
        "pub enum Command { A(crate::cmd::a::AArgs), B(crate::cmd::b::BArgs) }\n",
    );
    let run = module(&["run"], "pub fn measure() {}\n");
    let a = module(
        &["cmd", "a"],
        "pub struct AArgs;\npub fn run() { crate::run::measure(); }\n",
    );
    let b = module(
        &["cmd", "b"],
        "pub struct BArgs;\nuse crate::run::measure;\n",
    );
    let tree = [root, cmd, cli, run, a, b];
    assert_eq!(command_crossings(&graph(&tree)), Vec::<String>::new());

    // `b` calls `a`'s `run`, and the library takes `b`'s flags.
    let mut crossing = tree;
    crossing[5] = module(
        &["cmd", "b"],
        "pub struct BArgs;\npub fn run() { crate::cmd::a::run(); }\n",
    );
    crossing[3] = module(&["run"], "pub fn measure(_: &crate::cmd::b::BArgs) {}\n");
    assert_eq!(
        command_crossings(&graph(&crossing)),
        vec![
            "cmd/b.rs -> cmd/a.rs: run".to_string(),
            "run.rs -> cmd/b.rs: BArgs".to_string(),
        ]
    );
}
