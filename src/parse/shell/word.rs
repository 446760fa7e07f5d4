//! One word of a statement: quoting, escapes and the expansions the reader understands (see ../shell.rs).

use super::{MAX_VALUE, Reader, ShellError, Val, Var, Word, ends_word, is_name};

/// The most bytes all the words of the files may make together: a file of many long expansions is refused
/// quickly instead of being copied for seconds.
const MAX_TOTAL: usize = 16 * 1024 * 1024;

impl Reader<'_> {
    fn err_at(&self, line: usize, what: &str) -> ShellError {
        ShellError {
            file: self.file.to_string(),
            line,
            what: what.to_string(),
        }
    }
    fn unknown_at(&self, line: usize, what: &str) -> Val {
        Val::Unknown(format!("{} line {line}: {what}", self.file))
    }
    fn bounded(&mut self, v: &Val) -> Result<(), ShellError> {
        if v.len() > MAX_VALUE {
            return Err(self.err("a value longer than 64 KiB"));
        }
        Ok(())
    }

    /// `NAME=` written unquoted at the start of the word: the name, and the reader moved past `=`.
    fn assignment_name(&mut self) -> Option<String> {
        let n = self.s[self.i..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
            .count();
        let name = &self.s[self.i..self.i + n];
        if self.s.get(self.i + n) != Some(&b'=') || !is_name(name) {
            return None;
        }
        self.i += n + 1;
        Some(String::from_utf8_lossy(name).into_owned())
    }

    /// One word, from an unquoted position up to a blank or an operator.
    pub(super) fn word(&mut self) -> Result<Word, ShellError> {
        let start = self.i;
        let name = self.assignment_name();
        let mut val = Val::Known(vec![]);
        let mut split = false;
        // Where an assignment's `~` would be a home directory: at the start of the value and after `:`.
        let mut tilde = name.is_some();
        while let Some(b) = self.peek().filter(|b| !ends_word(*b)) {
            let tilde_here = std::mem::replace(&mut tilde, false);
            let line = self.line;
            self.bump();
            match b {
                b'\\' => match self.bump() {
                    Some(b'\n') => {}
                    Some(c) => val.push(&[c]),
                    None => val.push(b"\\"),
                },
                b'\'' => {
                    let s0 = self.i;
                    while self.peek().is_some_and(|c| c != b'\'') {
                        self.bump();
                    }
                    if self.bump().is_none() {
                        return Err(self.err_at(line, "unterminated single quote"));
                    }
                    val.push(&self.s[s0..self.i - 1]);
                }
                b'"' => val.append(self.double(line)?),
                b'$' => {
                    split = true;
                    val.append(self.dollar(false)?);
                }
                b'`' => val.append(self.backquote(line)?),
                b'~' if tilde_here => {
                    val.append(self.unknown_at(line, "`~` (a home directory) is not read"))
                }
                _ => {
                    split |= matches!(b, b'*' | b'?' | b'[');
                    tilde = b == b':' && name.is_some();
                    val.push(&[b]);
                }
            }
            self.bounded(&val)?;
        }
        self.spent += val.len();
        if self.spent > MAX_TOTAL {
            return Err(self.err("the values add up to more than 16 MiB"));
        }
        Ok(Word {
            val,
            name,
            split,
            raw: self.s[start..self.i].to_vec(),
        })
    }

    /// Inside double quotes, after the opening one (on `line`).
    fn double(&mut self, line: usize) -> Result<Val, ShellError> {
        let mut v = Val::Known(vec![]);
        loop {
            let here = self.line;
            match self.bump() {
                None => return Err(self.err_at(line, "unterminated double quote")),
                Some(b'"') => return Ok(v),
                Some(b'\\') => match self.peek() {
                    Some(c @ (b'$' | b'`' | b'"' | b'\\')) => {
                        self.bump();
                        v.push(&[c]);
                    }
                    Some(b'\n') => {
                        self.bump();
                    }
                    _ => v.push(b"\\"),
                },
                Some(b'$') => v.append(self.dollar(true)?),
                Some(b'`') => v.append(self.backquote(here)?),
                Some(c) => v.push(&[c]),
            }
            self.bounded(&v)?;
        }
    }

    /// After `$`.
    fn dollar(&mut self, quoted: bool) -> Result<Val, ShellError> {
        let line = self.line;
        match self.peek() {
            Some(b'{') => {
                self.bump();
                self.braced(quoted)
            }
            Some(b'(') if self.peek_at(1) == Some(b'(') => {
                Err(self.err("arithmetic `$((…))` is not read"))
            }
            Some(b'(') => {
                self.bump();
                self.skip_substitution(line)?;
                Ok(self.unknown_at(line, "a command substitution `$(…)` is not run"))
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let n = self.s[self.i..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                    .count();
                let name = String::from_utf8_lossy(&self.s[self.i..self.i + n]).into_owned();
                self.i += n;
                Ok(self.lookup(&name))
            }
            Some(c) if c.is_ascii_digit() || b"@*#?-$!".contains(&c) => {
                self.bump();
                Ok(self.unknown_at(
                    line,
                    &format!("`${}` is grub-mkconfig's own, not these files'", c as char),
                ))
            }
            Some(b'\'' | b'"') if !quoted => {
                Err(self
                    .err("`$'…'` and `$\"…\"` mean different things to dash and bash: not read"))
            }
            _ => Ok(Val::Known(b"$".to_vec())),
        }
    }

    /// A variable's value: set by these files, a GRUB_ name they never set (empty, as in grub-mkconfig), or
    /// unknown (another name comes from grub-mkconfig's environment).
    fn lookup(&self, name: &str) -> Val {
        match self.vars.get(name) {
            Some(Var::Set(v)) => Val::Known(v.as_bytes().to_vec()),
            Some(Var::Unknown(w)) => Val::Unknown(w.clone()),
            None if name.starts_with("GRUB_") || self.vars.was_unset(name) => Val::Known(vec![]),
            None => self.unknown(&format!(
                "${name} is not set in these files (it would come from grub-mkconfig's environment)"
            )),
        }
    }

    /// After `${`: `NAME}`, or `NAME` with `:-` `-` `:+` `+` and a word.
    fn braced(&mut self, quoted: bool) -> Result<Val, ShellError> {
        let n = self.s[self.i..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
            .count();
        let name = &self.s[self.i..self.i + n];
        if !is_name(name) {
            return Err(self.err("`${…}` of a special parameter or with a length is not read"));
        }
        let name = String::from_utf8_lossy(name).into_owned();
        self.i += n;
        let base = self.lookup(&name);
        let colon = self.peek() == Some(b':');
        let op = self.peek_at(usize::from(colon));
        match op {
            Some(b'}') if !colon => {
                self.bump();
                return Ok(base);
            }
            Some(b'-' | b'+') => self.i += 1 + usize::from(colon),
            _ => return Err(self.err(format!("`${{{name}…}}` with this operator is not read"))),
        }
        let word = self.param_word(quoted)?;
        if let Val::Unknown(_) = base {
            return Ok(base);
        }
        let is_set = self.vars.get(&name).is_some() && !(colon && base.len() == 0);
        Ok(match (op, is_set) {
            (Some(b'-'), true) => base,
            (Some(b'-'), false) => word,
            (_, true) => word,
            (_, false) => Val::Known(vec![]),
        })
    }

    /// The word of `${NAME:-word}` up to its `}`.
    fn param_word(&mut self, quoted: bool) -> Result<Val, ShellError> {
        let line = self.line;
        let mut v = Val::Known(vec![]);
        loop {
            match self.bump() {
                None => return Err(self.err_at(line, "unterminated `${`")),
                Some(b'}') => return Ok(v),
                Some(b'\\') => match self.bump() {
                    Some(b'\n') => {}
                    Some(c) if !quoted || b"$`\"\\}".contains(&c) => v.push(&[c]),
                    Some(c) => v.push(&[b'\\', c]),
                    None => return Err(self.err_at(line, "unterminated `${`")),
                },
                Some(b'$') => v.append(self.dollar(quoted)?),
                Some(b'\'' | b'"' | b'`' | b'~') => {
                    return Err(self.err("quotes, backquotes or `~` inside `${…}` are not read"));
                }
                Some(c) => v.push(&[c]),
            }
            self.bounded(&v)?;
        }
    }

    /// Past `$(` (opened on `line`) to its `)`, quotes and nesting followed; nothing in it is read.
    fn skip_substitution(&mut self, line: usize) -> Result<(), ShellError> {
        let mut depth = 1;
        while depth > 0 {
            match self.bump() {
                None => return Err(self.err_at(line, "unterminated `$(`")),
                Some(b'(') => depth += 1,
                Some(b')') => depth -= 1,
                Some(b'\\') => {
                    self.bump();
                }
                Some(b'\'') => while self.bump().is_some_and(|c| c != b'\'') {},
                Some(b'"') => {
                    self.double(line)?;
                }
                Some(b'`') => {
                    self.backquote(line)?;
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Past a backquoted command substitution, after its opening backquote (on `line`).
    fn backquote(&mut self, line: usize) -> Result<Val, ShellError> {
        loop {
            match self.bump() {
                None => return Err(self.err_at(line, "unterminated backquote")),
                Some(b'`') => break,
                Some(b'\\') => {
                    self.bump();
                }
                Some(_) => {}
            }
        }
        Ok(self.unknown_at(line, "a command substitution `…` is not run"))
    }
}
