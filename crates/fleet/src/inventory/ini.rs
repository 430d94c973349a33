//! The native reader of Ansible INI inventories, used when `ansible-inventory` is not
//! on PATH (or `IOFLEET_INVENTORY_READER=native`). It follows the rules of Ansible's
//! own INI plugin, so that both readers give the same hosts and variables (checked by
//! `crates/fleet/tests/ansible_parity.rs`):
//!
//! - lines before any section are hosts of `ungrouped`; `[g]` lists hosts, `[g:vars]`
//!   sets group variables (one `key=value` a line), `[g:children]` lists child groups
//!   (declared before or after); `#` and `;` start comment lines;
//! - a host line is split as a POSIX shell would (quotes, backslashes, `#` comments);
//!   the first word is a host pattern with ranges, `node[01:04]` (leading zeros kept),
//!   `[a:c]`, strides `[1:9:2]`, several per name, and an optional `:PORT`;
//! - values are typed as Python literals (`literal.rs`);
//! - a host may sit in several groups; its variables merge as Ansible merges them:
//!   groups by (depth below `all`, `ansible_group_priority`, name), then host variables,
//!   later ones overriding earlier ones.
//!
//! It does not read `group_vars/` or `host_vars/` directories, vaults or plugins: those
//! need `ansible-inventory`. Every malformed line is an error naming its line.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use super::ansible::{Group, Inventory, Var};
use super::literal;

/// Why a line was refused: its 1-based number and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct LineError {
    pub line: usize,
    pub message: String,
}

fn err<T>(line: usize, message: impl Into<String>) -> Result<T, LineError> {
    Err(LineError {
        line,
        message: message.into(),
    })
}

struct G {
    name: String,
    /// `ansible_group_priority` (default 1).
    priority: i64,
    hosts: Vec<usize>,
    children: Vec<usize>,
    parents: Vec<usize>,
    vars: BTreeMap<String, Var>,
}

struct H {
    name: String,
    vars: BTreeMap<String, Var>,
}

#[derive(Clone, Copy, PartialEq)]
enum State {
    Hosts,
    Vars,
    Children,
}

/// A group named before it was declared: by `[g:vars]`, or as a child.
struct Pending {
    name: String,
    line: usize,
    children: bool,
    parents: Vec<usize>,
}

#[derive(Default)]
struct Builder {
    groups: Vec<G>,
    group_index: HashMap<String, usize>,
    hosts: Vec<H>,
    host_index: HashMap<String, usize>,
    pending: Vec<Pending>,
    /// (group, host) pairs already listed.
    listed: HashSet<(usize, usize)>,
}

impl Builder {
    fn group(&mut self, name: &str) -> usize {
        if let Some(&i) = self.group_index.get(name) {
            return i;
        }
        self.groups.push(G {
            name: name.to_string(),
            priority: 1,
            hosts: vec![],
            children: vec![],
            parents: vec![],
            vars: BTreeMap::new(),
        });
        self.group_index
            .insert(name.to_string(), self.groups.len() - 1);
        self.groups.len() - 1
    }

    /// Whether `a` is above `of`; each group looked at once (a recursion per path was
    /// exponential in a ladder of groups, each the child of two).
    fn is_ancestor(&self, a: usize, of: usize) -> bool {
        let mut seen = HashSet::new();
        let mut stack = vec![of];
        while let Some(g) = stack.pop() {
            for &p in &self.groups[g].parents {
                if p == a {
                    return true;
                }
                if seen.insert(p) {
                    stack.push(p);
                }
            }
        }
        false
    }

    fn add_child(&mut self, parent: usize, child: usize, line: usize) -> Result<(), LineError> {
        if parent == child || self.is_ancestor(child, parent) {
            return err(
                line,
                format!(
                    "adding group '{}' as a child of '{}' makes a loop",
                    self.groups[child].name, self.groups[parent].name
                ),
            );
        }
        if !self.groups[parent].children.contains(&child) {
            self.groups[parent].children.push(child);
            self.groups[child].parents.push(parent);
        }
        Ok(())
    }

    fn pending(&self, name: &str) -> Option<usize> {
        self.pending.iter().position(|p| p.name == name)
    }

    /// `group` is declared: link it under the parents that named it as a child.
    fn resolve_pending(&mut self, group: usize, line: usize) -> Result<(), LineError> {
        let Some(k) = self.pending(&self.groups[group].name) else {
            return Ok(());
        };
        let p = self.pending.remove(k);
        if p.children {
            for parent in p.parents {
                self.add_child(parent, group, line)?;
                if self
                    .pending(&self.groups[parent].name)
                    .is_some_and(|k| self.pending[k].children)
                {
                    self.resolve_pending(parent, line)?;
                }
            }
        }
        Ok(())
    }

    fn add_host(&mut self, name: &str, group: usize, port: Option<u16>, line: usize) -> usize {
        let h = match self.host_index.get(name) {
            Some(&h) => h,
            None => {
                let mut vars = BTreeMap::new();
                // As Ansible does, a `:PORT` counts only where the host first appears.
                if let Some(p) = port {
                    vars.insert(
                        "ansible_port".to_string(),
                        Var {
                            value: Value::from(p),
                            line: Some(line),
                        },
                    );
                }
                self.hosts.push(H {
                    name: name.to_string(),
                    vars,
                });
                self.host_index
                    .insert(name.to_string(), self.hosts.len() - 1);
                self.hosts.len() - 1
            }
        };
        // A set beside the list: a search of the list per host was quadratic.
        if self.listed.insert((group, h)) {
            self.groups[group].hosts.push(h);
        }
        h
    }
}

/// Read an INI inventory's text.
pub fn parse(text: &str) -> Result<Inventory, LineError> {
    let mut b = Builder::default();
    let all = b.group("all");
    let ungrouped = b.group("ungrouped");
    b.add_child(all, ungrouped, 0)?;
    let mut group = ungrouped;
    let mut state = State::Hosts;
    for (n, raw) in text.lines().enumerate() {
        let n = n + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some((name, tag)) = section(line) {
            (group, state) = b.enter_section(name, tag, n)?;
            continue;
        }
        if line.starts_with('[') && line.ends_with(']') {
            return err(
                n,
                format!("malformed section header '{line}' (expected [group], [group:vars] or [group:children], without spaces)"),
            );
        }
        match state {
            State::Hosts => b.read_host_line(line, n, group)?,
            State::Vars => b.read_var_line(line, n, group)?,
            State::Children => b.read_child_line(line, n, group)?,
        }
    }
    b.check_undeclared()?;
    Ok(b.finish())
}

impl Builder {
    /// A section header `[name:tag]` on line `n`: the group and state it opens.
    fn enter_section(
        &mut self,
        name: &str,
        tag: Option<&str>,
        n: usize,
    ) -> Result<(usize, State), LineError> {
        let state = match tag {
            None | Some("hosts") => State::Hosts,
            Some("vars") => State::Vars,
            Some("children") => State::Children,
            Some(t) => {
                let message = format!(
                    "section [{name}:{t}] has an unknown type '{t}' (expected vars or children)"
                );
                return err(n, message);
            }
        };
        if !self.group_index.contains_key(name)
            && state == State::Vars
            && self.pending(name).is_none()
        {
            self.pending.push(Pending {
                name: name.to_string(),
                line: n,
                children: false,
                parents: vec![],
            });
        }
        let group = self.group(name);
        if state != State::Vars {
            self.resolve_pending(group, n)?;
        }
        Ok((group, state))
    }

    /// A host line of `group`: its hosts, each with the line's variables.
    fn read_host_line(&mut self, line: &str, n: usize, group: usize) -> Result<(), LineError> {
        let (names, port, vars) = host_line(line).map_err(|message| {
            let message = if line.starts_with('[') {
                format!("'{line}' is neither a section header ([group], [group:vars], [group:children]) nor a host: {message}")
            } else {
                message
            };
            LineError { line: n, message }
        })?;
        for name in names {
            let h = self.add_host(&name, group, port, n);
            for (k, v) in &vars {
                self.hosts[h].vars.insert(
                    k.clone(),
                    Var {
                        value: v.clone(),
                        line: Some(n),
                    },
                );
            }
        }
        Ok(())
    }

    /// A `key=value` line of `[group:vars]`.
    fn read_var_line(&mut self, line: &str, n: usize, group: usize) -> Result<(), LineError> {
        let Some((k, v)) = line.split_once('=') else {
            return err(
                n,
                format!(
                    "expected key=value in [{}:vars], got '{line}'",
                    self.groups[group].name
                ),
            );
        };
        let k = k.trim();
        if k.is_empty() {
            return err(n, format!("'{line}' sets a variable with no name"));
        }
        let value = literal::eval(v.trim());
        // As in Ansible, the priority orders groups of one depth; it is not a
        // variable of the hosts.
        if k == "ansible_group_priority" {
            self.groups[group].priority = match &value {
                Value::Number(p) => p.as_i64(),
                Value::String(s) => s.trim().parse().ok(),
                _ => None,
            }
            .ok_or_else(|| LineError {
                line: n,
                message: format!("ansible_group_priority={} is not a whole number", v.trim()),
            })?;
            return Ok(());
        }
        self.groups[group].vars.insert(
            k.to_string(),
            Var {
                value,
                line: Some(n),
            },
        );
        Ok(())
    }

    /// A child group's name in `[group:children]`, declared or yet to be.
    fn read_child_line(&mut self, line: &str, n: usize, group: usize) -> Result<(), LineError> {
        let child = group_name(line).ok_or_else(|| LineError {
            line: n,
            message: format!(
                "expected a group name in [{}:children], got '{line}'",
                self.groups[group].name
            ),
        })?;
        match self.group_index.get(child) {
            Some(&c) => self.add_child(group, c, n)?,
            None => match self.pending(child) {
                Some(k) => self.pending[k].parents.push(group),
                None => self.pending.push(Pending {
                    name: child.to_string(),
                    line: n,
                    children: true,
                    parents: vec![group],
                }),
            },
        }
        Ok(())
    }

    /// At the end of the text: the first group named but never declared is an error.
    fn check_undeclared(&self) -> Result<(), LineError> {
        if let Some(p) = self.pending.first() {
            return if p.children {
                let parent = &self.groups[*p.parents.last().expect("a child has a parent")].name;
                err(
                    p.line,
                    format!(
                        "[{parent}:children] names group '{}', which is never declared",
                        p.name
                    ),
                )
            } else {
                err(
                    p.line,
                    format!(
                        "[{0}:vars] is for group '{0}', which is never declared",
                        p.name
                    ),
                )
            };
        }
        Ok(())
    }
}

impl Builder {
    /// As Ansible reconciles an inventory: top-level groups become children of `all`,
    /// hosts listed in a group leave `ungrouped`; then variables are resolved.
    fn finish(mut self) -> Inventory {
        let (all, ungrouped) = (0, 1);
        for g in 2..self.groups.len() {
            if self.groups[g].parents.is_empty() {
                self.groups[all].children.push(g);
                self.groups[g].parents.push(all);
            }
        }
        let mut direct: Vec<Vec<usize>> = vec![vec![]; self.hosts.len()];
        for (gi, g) in self.groups.iter().enumerate() {
            for &h in &g.hosts {
                direct[h].push(gi);
            }
        }
        let mut leave_ungrouped = HashSet::new();
        for (h, gs) in direct.iter_mut().enumerate() {
            if gs.len() > 1 && gs.contains(&ungrouped) {
                gs.retain(|&g| g != ungrouped);
                leave_ungrouped.insert(h);
            }
        }
        self.groups[ungrouped]
            .hosts
            .retain(|x| !leave_ungrouped.contains(x));
        let depth = self.depths();
        let priority = |g: &G| g.priority;
        let mut vars = BTreeMap::new();
        for (h, host) in self.hosts.iter().enumerate() {
            let mut mine: Vec<usize> = Vec::new();
            for &g in &direct[h] {
                self.ancestors_and_self(g, &mut mine);
            }
            mine.sort_by(|&a, &b| {
                (depth[a], priority(&self.groups[a]), &self.groups[a].name).cmp(&(
                    depth[b],
                    priority(&self.groups[b]),
                    &self.groups[b].name,
                ))
            });
            let mut resolved = BTreeMap::new();
            for g in mine {
                resolved.extend(self.groups[g].vars.clone());
            }
            resolved.extend(host.vars.clone());
            vars.insert(host.name.clone(), resolved);
        }
        let name_of = |v: &[usize], hosts: bool| -> Vec<String> {
            v.iter()
                .map(|&i| {
                    if hosts {
                        self.hosts[i].name.clone()
                    } else {
                        self.groups[i].name.clone()
                    }
                })
                .collect()
        };
        let groups = self
            .groups
            .iter()
            .enumerate()
            .map(|(gi, g)| Group {
                name: g.name.clone(),
                hosts: if gi == all {
                    vec![]
                } else {
                    name_of(&g.hosts, true)
                },
                children: name_of(&g.children, false),
            })
            .collect();
        Inventory::from_groups(groups, vars)
    }

    /// Each group's longest path from `all`, each group's computed once from its
    /// parents' (a recursion per path was exponential; loops are refused as they are read).
    fn depths(&self) -> Vec<usize> {
        let mut depth: Vec<Option<usize>> = vec![None; self.groups.len()];
        for start in 0..self.groups.len() {
            let mut stack = vec![start];
            while let Some(&g) = stack.last() {
                let parents = &self.groups[g].parents;
                let todo: Vec<usize> = parents
                    .iter()
                    .copied()
                    .filter(|&p| depth[p].is_none())
                    .collect();
                if todo.is_empty() {
                    depth[g] = Some(
                        parents
                            .iter()
                            .filter_map(|&p| depth[p])
                            .max()
                            .map_or(0, |d| d + 1),
                    );
                    stack.pop();
                } else {
                    stack.extend(todo);
                }
            }
        }
        depth.into_iter().map(|d| d.unwrap_or(0)).collect()
    }

    fn ancestors_and_self(&self, g: usize, out: &mut Vec<usize>) {
        if !out.contains(&g) {
            out.push(g);
            for &p in &self.groups[g].parents {
                self.ancestors_and_self(p, out);
            }
        }
    }
}

/// `[name]`, `[name:tag]`, optionally followed by a comment: (name, tag).
fn section(line: &str) -> Option<(&str, Option<&str>)> {
    let rest = line.strip_prefix('[')?;
    let close = rest.find(']')?;
    let after = rest[close + 1..].trim_start();
    if !(after.is_empty() || after.starts_with('#')) {
        return None;
    }
    let inner = &rest[..close];
    let (name, tag) = match inner.split_once(':') {
        Some((n, t)) => (n, Some(t)),
        None => (inner, None),
    };
    let name_ok =
        !name.is_empty() && !name.contains(|c: char| c.is_whitespace() || c == ':' || c == ']');
    let tag_ok =
        tag.is_none_or(|t| !t.is_empty() && t.chars().all(|c| c.is_alphanumeric() || c == '_'));
    (name_ok && tag_ok).then_some((name, tag))
}

/// A line of a `:children` section: one group name, optionally a comment.
fn group_name(line: &str) -> Option<&str> {
    let end = line.find(char::is_whitespace).unwrap_or(line.len());
    let (name, rest) = line.split_at(end);
    let rest = rest.trim_start();
    (!name.is_empty() && !name.contains([':', ']']) && (rest.is_empty() || rest.starts_with('#')))
        .then_some(name)
}

type HostLine = (Vec<String>, Option<u16>, Vec<(String, Value)>);

/// A host line: the expanded host names, a `:PORT`, and the `key=value` variables.
fn host_line(line: &str) -> Result<HostLine, String> {
    let words = split_words(line)?;
    let Some((pattern, assignments)) = words.split_first() else {
        return Err("a host line without a host".into());
    };
    let (pattern, port) = split_port(pattern)?;
    // Checked before a range is expanded: a control character would be in every name.
    super::host_name(pattern).map_err(|m| format!("the host name {m}"))?;
    let names = if pattern.contains('[') {
        expand(pattern)?
    } else {
        vec![pattern.to_string()]
    };
    let mut vars = Vec::new();
    for a in assignments {
        let Some((k, v)) = a.split_once('=') else {
            return Err(format!("'{a}' is not a key=value host variable"));
        };
        if k.is_empty() {
            return Err(format!("'{a}' sets a variable with no name"));
        }
        vars.push((k.to_string(), literal::eval(v)));
    }
    Ok((names, port, vars))
}

/// `host:PORT` → (host, port). A colon inside a range, or in an IPv6 address (more
/// than one colon), is not a port; `[IPv6]:PORT` is.
fn split_port(pattern: &str) -> Result<(&str, Option<u16>), String> {
    if let Some((addr, rest)) = pattern
        .strip_prefix('[')
        .and_then(|p| p.split_once(']'))
        .filter(|(a, _)| {
            a.matches(':').count() >= 2
                && a.chars()
                    .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
        })
    {
        return match rest.strip_prefix(':') {
            None if rest.is_empty() => Ok((addr, None)),
            Some(port) => Ok((addr, Some(parse_port(port, pattern)?))),
            None => Err(format!("'{pattern}': expected [IPv6 address]:PORT")),
        };
    }
    let mut depth = 0i32;
    let mut colons = Vec::new();
    for (i, c) in pattern.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ':' if depth == 0 => colons.push(i),
            _ => {}
        }
    }
    if pattern.ends_with(':') {
        return Err(format!(
            "host pattern '{pattern}' ends in ':' (write host:PORT, or set ansible_port)"
        ));
    }
    if let [i] = colons[..] {
        let port = &pattern[i + 1..];
        if !port.is_empty() && port.bytes().all(|c| c.is_ascii_digit()) {
            return Ok((&pattern[..i], Some(parse_port(port, pattern)?)));
        }
    }
    Ok((pattern, None))
}

fn parse_port(port: &str, pattern: &str) -> Result<u16, String> {
    port.parse()
        .ok()
        .filter(|&p| p > 0)
        .ok_or_else(|| format!("port {port} in '{pattern}' is not in 1..=65535"))
}

const LETTERS: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// The most hosts one pattern may expand to: far beyond any fleet, short of exhausting
/// memory on a typo such as `node[0:99999999999]`.
const MAX_HOSTS_PER_PATTERN: u64 = 100_000;

/// Expand the first `[begin:end(:step)]` range of `pattern`, then the rest, as Ansible
/// does: numbers keep the width of a zero-padded begin; letters run through a–z, A–Z.
fn expand(pattern: &str) -> Result<Vec<String>, String> {
    let Some(open) = pattern.find('[') else {
        return Ok(vec![pattern.to_string()]);
    };
    let close = match pattern.find(']') {
        Some(c) if c > open => c,
        _ => {
            return Err(format!(
                "host pattern '{pattern}' has a '[' without a matching ']'"
            ))
        }
    };
    let (head, range, tail) = (
        &pattern[..open],
        &pattern[open + 1..close],
        &pattern[close + 1..],
    );
    let bounds: Vec<&str> = range.split(':').collect();
    if !(2..=3).contains(&bounds.len()) {
        return Err(format!(
            "host range [{range}] in '{pattern}' must be [begin:end] or [begin:end:step]"
        ));
    }
    let begin = if bounds[0].is_empty() { "0" } else { bounds[0] };
    let end = bounds[1];
    if end.is_empty() {
        return Err(format!("host range [{range}] in '{pattern}' has no end"));
    }
    let step = match bounds.get(2) {
        None => 1,
        Some(s) => s.parse::<usize>().ok().filter(|&s| s > 0).ok_or_else(|| {
            format!("host range [{range}] in '{pattern}': step '{s}' is not a whole number above 0")
        })?,
    };
    let items: Vec<String> = match (LETTERS.find(begin), LETTERS.find(end)) {
        (Some(b), Some(e)) if begin.len() == 1 && end.len() == 1 => {
            if b > e {
                return Err(format!(
                    "host range [{range}] in '{pattern}' has begin after end"
                ));
            }
            LETTERS[b..=e]
                .chars()
                .step_by(step)
                .map(String::from)
                .collect()
        }
        _ => {
            let num = |s: &str| {
                s.parse::<u64>()
                    .map_err(|_| format!("host range [{range}] in '{pattern}': '{s}' is neither a number nor a letter"))
            };
            let (b, e) = (num(begin)?, num(end)?);
            let width = if begin.len() > 1 && begin.starts_with('0') {
                if begin.len() != end.len() {
                    return Err(format!(
                        "host range [{range}] in '{pattern}': a zero-padded begin and the end must have the same width"
                    ));
                }
                begin.len()
            } else {
                0
            };
            if e >= b && (e - b) / step as u64 + 1 > MAX_HOSTS_PER_PATTERN {
                return Err(format!(
                    "host range [{range}] in '{pattern}' expands to more than {MAX_HOSTS_PER_PATTERN} hosts"
                ));
            }
            (b..=e)
                .step_by(step)
                .map(|i| format!("{i:0width$}"))
                .collect()
        }
    };
    if items.is_empty() {
        return Err(format!(
            "host range [{range}] in '{pattern}' has begin after end"
        ));
    }
    let mut out = Vec::new();
    for item in items {
        out.extend(expand(&format!("{head}{item}{tail}"))?);
        if out.len() as u64 > MAX_HOSTS_PER_PATTERN {
            return Err(format!(
                "host pattern '{pattern}' expands to more than {MAX_HOSTS_PER_PATTERN} hosts"
            ));
        }
    }
    Ok(out)
}

/// Split a host line into words as Python's `shlex.split(line, comments=True)` does
/// (Ansible's rule): whitespace separates, `'…'` is literal, `"…"` lets `\` escape
/// `"` and `\`, a bare `\` escapes any character, `#` outside quotes ends the line.
/// (The `shlex` crate has no comment handling, and comments must respect quotes.)
fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '#' => break,
            '\\' => {
                cur.push(chars.next().ok_or("a '\\' at the end of the line")?);
                in_word = true;
            }
            '\'' => {
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                        None => return Err("a quote (') is not closed".into()),
                    }
                }
                in_word = true;
            }
            '"' => {
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(x @ ('"' | '\\')) => cur.push(x),
                            Some(x) => {
                                cur.push('\\');
                                cur.push(x);
                            }
                            None => return Err("a quote (\") is not closed".into()),
                        },
                        Some(x) => cur.push(x),
                        None => return Err("a quote (\") is not closed".into()),
                    }
                }
                in_word = true;
            }
            c => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars(inv: &Inventory, host: &str) -> BTreeMap<String, Value> {
        inv.hosts
            .iter()
            .find(|h| h.name == host)
            .unwrap_or_else(|| panic!("no host {host}"))
            .vars
            .iter()
            .map(|(k, v)| (k.clone(), v.value.clone()))
            .collect()
    }

    fn names(inv: &Inventory) -> Vec<&str> {
        inv.hosts.iter().map(|h| h.name.as_str()).collect()
    }

    #[test]
    fn ranges_expand_with_widths_letters_and_strides() {
        let inv = parse("[n]\nnode[01:03]\nb[a:c]-x\ns[1:9:4]\nr[8:10]\nm[1:2][a:b]\n").unwrap();
        assert_eq!(
            names(&inv),
            [
                "node01", "node02", "node03", "ba-x", "bb-x", "bc-x", "s1", "s5", "s9", "r8", "r9",
                "r10", "m1a", "m1b", "m2a", "m2b"
            ]
        );
        for bad in ["x[1:]", "x[01:4]", "x[3:1]", "x[1:2:0]", "x[1-3]", "x[1:2"] {
            let e = parse(&format!("[g]\n{bad}\n")).unwrap_err();
            assert_eq!(e.line, 2, "{bad}: {e:?}");
            assert!(e.message.contains(bad), "{bad}: {e:?}");
        }
    }

    #[test]
    fn a_host_in_two_groups_is_one_host_with_merged_vars() {
        let inv = parse(
            "[a]\nh1 x=1\nh2\n[b]\nh1 y=2\n[a:vars]\nga=a\nshared=a\n[b:vars]\nshared=b\n[all:vars]\nga=all\nz=all\n",
        )
        .unwrap();
        assert_eq!(names(&inv), ["h1", "h2"]);
        assert_eq!(inv.hosts[0].groups, ["a", "b"]);
        // Same depth: merged by name, so b's value wins over a's; all is below both.
        assert_eq!(
            vars(&inv, "h1"),
            BTreeMap::from([
                ("x".into(), json!(1)),
                ("y".into(), json!(2)),
                ("ga".into(), json!("a")),
                ("shared".into(), json!("b")),
                ("z".into(), json!("all")),
            ])
        );
    }

    #[test]
    fn children_depth_beats_name_and_host_beats_groups() {
        let inv = parse(
            "[zz:children]\naa\n[aa]\nh1 v=host\nh2\n[aa:vars]\nv=child\nw=child\n[zz:vars]\nv=parent\nw=parent\nu=parent\n",
        )
        .unwrap();
        assert_eq!(vars(&inv, "h1")["v"], json!("host"));
        assert_eq!(vars(&inv, "h2")["v"], json!("child"));
        assert_eq!(vars(&inv, "h2")["u"], json!("parent"));
        let zz = inv.groups.iter().find(|g| g.name == "zz").unwrap();
        assert_eq!(zz.children, ["aa"]);
        let all = &inv.groups[0];
        assert_eq!(all.children, ["ungrouped", "zz"]);
    }

    #[test]
    fn host_lines_split_like_a_shell_and_values_are_typed() {
        let inv = parse("h1:2200 a=\"x y\" b='\"3\"' c=4 e=True d=/p#c f=1 # comment\n").unwrap();
        let v = vars(&inv, "h1");
        assert_eq!(v["ansible_port"], json!(2200));
        assert_eq!(v["a"], json!("x y"));
        assert_eq!(v["b"], json!("3"));
        assert_eq!(v["c"], json!(4));
        assert_eq!(v["d"], json!("/p"));
        assert_eq!(v["e"], json!(true));
        assert!(!v.contains_key("f") && !v.contains_key("comment"));
        assert_eq!(inv.hosts[0].groups, ["ungrouped"]);
    }

    #[test]
    fn malformed_lines_name_their_line() {
        for (text, line, needle) in [
            ("[nodes\nn1\n", 1, "[nodes"),
            ("[g]\nn1\n[g x]\n", 3, "malformed section header"),
            ("[g:hosts2]\n", 1, "unknown type"),
            ("[g]\nn1 oops\n", 2, "'oops' is not a key=value"),
            ("[g]\nn1 a='x\n", 2, "not closed"),
            ("[g]\nn1\n[g:vars]\nnovalue\n", 4, "expected key=value"),
            ("[g:children]\na b\n", 2, "expected a group name"),
            ("[g:children]\nmissing\n[g]\nn1\n", 2, "never declared"),
            ("[v:vars]\nx=1\n", 1, "never declared"),
            ("[a:children]\nb\n[b:children]\na\n", 4, "loop"),
            ("[g]\nn1:\n", 2, "ends in ':'"),
            (
                "[g]\nn1\n[g:vars]\nansible_group_priority=high\n",
                4,
                "not a whole number",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e:?}");
            assert!(e.message.contains(needle), "{text:?}: {e:?}");
        }
    }

    #[test]
    fn a_range_past_any_fleet_is_refused_not_expanded() {
        let e = expand("node[0:99999999999]").unwrap_err();
        assert!(e.contains("more than 100000 hosts"), "{e}");
        let e = expand("n[0:999]x[0:999]").unwrap_err();
        assert!(e.contains("more than 100000 hosts"), "{e}");
        assert_eq!(expand("n[1:3]").unwrap(), ["n1", "n2", "n3"]);
    }
}
