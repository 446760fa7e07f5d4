//! The shell assignments GRUB's configuration files are made of (/etc/default/grub, /etc/default/grub.d/*.cfg),
//! read without running anything. grub-mkconfig sources these files with /bin/sh; what they hold is untrusted
//! when they come from a snapshot, so here they are read as data: `NAME=value` (several on a line, or after
//! `;`), `export NAME[=value]`, `unset NAME`, comments, blank lines, backslash-newline continuations, and the
//! words' quoting: single quotes, double quotes (with `\"` `\\` `\$` `` \` `` and `\newline`), backslash escapes,
//! `$NAME`, `${NAME}`, `${NAME:-w}`, `${NAME-w}`, `${NAME:+w}`, `${NAME+w}` of variables these files set
//! (GRUB_* names never set are empty, as in grub-mkconfig). The value is what dash and bash give (the
//! comparison runs in the tests, never here).
//!
//! What is not understood statically is never guessed: a command substitution (`$(…)`, backquotes), `~`, a
//! special parameter (`$1`, `$@` …) or a variable these files do not set makes the assigned variable *unknown*,
//! with the file and line why; any other statement (a command, `if`, a function, `. file`, a pipe, a
//! redirection, arithmetic …) stops the reading with an error naming the file and line. Bounded: the input is a
//! file Host read with its size bound, and no value grows past [`MAX_VALUE`].

use std::collections::BTreeMap;

/// The longest value kept (a kernel command line is at most 4 KiB); longer is an error, not a slow expansion.
pub(crate) const MAX_VALUE: usize = 64 * 1024;

/// A variable after reading: its value, or why it cannot be known without running the files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Var {
    Set(String),
    Unknown(String),
}

/// The variables the files set, and the names they unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vars(BTreeMap<String, Var>, std::collections::BTreeSet<String>);

impl Vars {
    pub(crate) fn get(&self, name: &str) -> Option<&Var> {
        self.0.get(name)
    }
    /// The value of `name` as grub-mkconfig would read it: unset is empty; Err: why it is unknown.
    pub fn value(&self, name: &str) -> Result<&str, &str> {
        match self.0.get(name) {
            None => Ok(""),
            Some(Var::Set(v)) => Ok(v),
            Some(Var::Unknown(why)) => Err(why),
        }
    }
    pub(crate) fn set(&mut self, name: &str, v: Var) {
        self.0.insert(name.to_string(), v);
    }
    pub(crate) fn unset(&mut self, name: &str) {
        self.0.remove(name);
        self.1.insert(name.to_string());
    }
    /// Why some variable is unknown, if one is (the first by name).
    pub fn first_unknown(&self) -> Option<(&str, &str)> {
        self.0.iter().find_map(|(n, v)| match v {
            Var::Unknown(w) => Some((n.as_str(), w.as_str())),
            Var::Set(_) => None,
        })
    }
    /// Whether these files unset `name` (then it is known to be empty, whatever the environment held).
    fn was_unset(&self, name: &str) -> bool {
        self.1.contains(name)
    }
}

/// A statement the reader does not follow, or a syntax error the shell would stop on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file} line {line}: {what}")]
pub struct ShellError {
    pub(crate) file: String,
    pub(crate) line: usize,
    pub(crate) what: String,
}

/// A word's value: bytes, or why it cannot be known.
#[derive(Debug, Clone)]
enum Val {
    Known(Vec<u8>),
    Unknown(String),
}

impl Val {
    fn push(&mut self, b: &[u8]) {
        if let Val::Known(v) = self {
            v.extend_from_slice(b);
        }
    }
    fn append(&mut self, other: Val) {
        match other {
            Val::Known(b) => self.push(&b),
            Val::Unknown(w) if matches!(self, Val::Known(_)) => *self = Val::Unknown(w),
            Val::Unknown(_) => {}
        }
    }
    fn len(&self) -> usize {
        match self {
            Val::Known(v) => v.len(),
            Val::Unknown(_) => 0,
        }
    }
}

/// One word as read: its value, whether it starts with an unquoted `NAME=`, and whether an unquoted expansion
/// or glob character made it depend on field splitting (only `export`'s words care).
struct Word {
    val: Val,
    name: Option<String>,
    split: bool,
    /// The word's bytes as written (for naming a command in an error).
    raw: Vec<u8>,
}

/// Reads one file's statements into `vars`. `file` names the file in errors and reasons.
pub fn source(file: &str, text: &str, vars: &mut Vars) -> Result<(), ShellError> {
    let mut p = Reader {
        s: text.as_bytes(),
        i: 0,
        line: 1,
        file,
        vars,
        spent: 0,
    };
    p.statements()
}

struct Reader<'a> {
    s: &'a [u8],
    i: usize,
    line: usize,
    file: &'a str,
    vars: &'a mut Vars,
    /// The bytes the words made so far (bounded by word::MAX_TOTAL).
    spent: usize,
}

/// Bytes that end an unquoted word.
fn ends_word(b: u8) -> bool {
    matches!(
        b,
        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')'
    )
}

fn is_name(n: &[u8]) -> bool {
    n.first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        && n.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn peek_at(&self, k: usize) -> Option<u8> {
        self.s.get(self.i + k).copied()
    }
    fn bump(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.i += 1;
        if b == b'\n' {
            self.line += 1;
        }
        Some(b)
    }
    fn err(&self, what: impl Into<String>) -> ShellError {
        ShellError {
            file: self.file.to_string(),
            line: self.line,
            what: what.into(),
        }
    }
    fn unknown(&self, what: &str) -> Val {
        Val::Unknown(format!("{} line {}: {what}", self.file, self.line))
    }

    /// Spaces, tabs and backslash-newlines.
    fn blanks(&mut self) {
        loop {
            match (self.peek(), self.peek_at(1)) {
                (Some(b' ' | b'\t'), _) => self.i += 1,
                (Some(b'\\'), Some(b'\n')) => {
                    self.bump();
                    self.bump();
                }
                _ => return,
            }
        }
    }

    fn comment(&mut self) {
        while self.peek().is_some_and(|b| b != b'\n') {
            self.i += 1;
        }
    }

    fn statements(&mut self) -> Result<(), ShellError> {
        loop {
            self.blanks();
            match self.peek() {
                None => return Ok(()),
                Some(b'\n') => {
                    self.bump();
                }
                Some(b'#') => self.comment(),
                Some(b';') => return Err(self.err("`;` with no command before it")),
                Some(_) => {
                    self.command()?;
                    self.blanks();
                    match self.peek() {
                        Some(b';') => {
                            self.i += 1;
                            self.blanks();
                            if self.peek() == Some(b';') {
                                return Err(self.err("`;;` outside a case statement"));
                            }
                        }
                        Some(b'#') => self.comment(),
                        _ => {}
                    }
                }
            }
        }
    }

    /// One simple command: assignments, then nothing or an error; or `export …` / `unset …`; anything else is
    /// an error (a prefix assignment before a command included: the command would run).
    fn command(&mut self) -> Result<(), ShellError> {
        let mut assigned = false;
        loop {
            self.blanks();
            match self.peek() {
                None | Some(b'\n' | b';' | b'#') => return Ok(()),
                Some(b) if ends_word(b) => return Err(self.operator(b)),
                Some(_) => {}
            }
            let w = self.word()?;
            match w.name {
                Some(n) => {
                    self.vars.set(&n, var(w.val));
                    assigned = true;
                }
                None if assigned => {
                    return Err(self.err(format!(
                        "{} after an assignment is a command: GRUB's files are read here, never run",
                        shown(&w.raw)
                    )));
                }
                None if w.raw == b"export" => return self.export(),
                None if w.raw == b"unset" => return self.unset(),
                None => {
                    return Err(self.err(format!(
                        "{} is a command, not an assignment: GRUB's files are read here, never run",
                        shown(&w.raw)
                    )));
                }
            }
        }
    }

    /// The words up to the end of the command.
    fn args(&mut self) -> Result<Vec<Word>, ShellError> {
        let mut v = Vec::new();
        loop {
            self.blanks();
            match self.peek() {
                None | Some(b'\n' | b';' | b'#') => return Ok(v),
                Some(b) if ends_word(b) => return Err(self.operator(b)),
                Some(_) => v.push(self.word()?),
            }
        }
    }

    fn operator(&self, b: u8) -> ShellError {
        let what = match b {
            b'|' => "a pipe",
            b'&' => "`&` (a background job or `&&`)",
            b'<' | b'>' => "a redirection",
            _ => "a subshell or function",
        };
        self.err(format!(
            "{what} is not read: only assignments are understood"
        ))
    }

    fn export(&mut self) -> Result<(), ShellError> {
        let args = self.args()?;
        if args.is_empty() {
            return Err(self.err("`export` alone prints the environment: not read"));
        }
        for a in &args {
            match &a.name {
                Some(n) if a.split => {
                    let why = self.unknown(&format!(
                        "`export {n}=…` with an unquoted expansion is split differently by shells"
                    ));
                    self.vars.set(n, var(why));
                }
                Some(n) => self.vars.set(n, var(a.val.clone())),
                None if is_name(&a.raw) => {}
                None => return Err(self.err(format!("export {} is not read", shown(&a.raw)))),
            }
        }
        Ok(())
    }

    fn unset(&mut self) -> Result<(), ShellError> {
        for a in &self.args()? {
            if !is_name(&a.raw) {
                return Err(self.err(format!("unset {} is not read", shown(&a.raw))));
            }
            self.vars.unset(&String::from_utf8_lossy(&a.raw));
        }
        Ok(())
    }
}

fn var(v: Val) -> Var {
    match v {
        Val::Known(b) => Var::Set(String::from_utf8_lossy(&b).into_owned()),
        Val::Unknown(w) => Var::Unknown(w),
    }
}

/// A command's name as an error shows it: a plain word, else only that it is one.
fn shown(raw: &[u8]) -> String {
    let plain = !raw.is_empty()
        && raw.len() <= 40
        && raw
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"_./:+,=-".contains(b));
    if plain {
        format!("`{}`", String::from_utf8_lossy(raw))
    } else {
        "a statement".into()
    }
}

mod word;

#[cfg(test)]
mod tests;
