//! GRUB's effective command line computed as grub-mkconfig computes it: by sourcing the files with a real shell
//! (dash and bash), independent of fix's own reading of them.

use std::path::Path;
use std::process::Command;

/// GRUB_CMDLINE_LINUX and _DEFAULT after sourcing `root`'s /etc/default/grub and grub.d/*.cfg in name order, as
/// grub-mkconfig does, under `set -e`, with `shell` (sh is dash on Debian); Err: the shell's error. fix's drop-in
/// reads its state file in `root`.
pub fn source(root: &Path, shell: &str) -> Result<(String, String), String> {
    let scratch = tempfile::Builder::new()
        .prefix("fx-grub-")
        .tempdir()
        .unwrap();
    let mut files = Vec::new();
    let g = root.join("etc/default/grub");
    if g.is_file() {
        files.push(g);
    }
    let mut names: Vec<String> = std::fs::read_dir(root.join("etc/default/grub.d"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    for n in names.iter().filter(|n| n.ends_with(".cfg")) {
        let p = root.join("etc/default/grub.d").join(n);
        if n.ends_with("rmp-eval.cfg") {
            let state = root.join("var/lib/rmp-eval/cmdline");
            let text = std::fs::read_to_string(&p)
                .unwrap()
                .replace("/var/lib/rmp-eval/cmdline", state.to_str().unwrap());
            let copy = scratch.path().join(n);
            std::fs::write(&copy, text).unwrap();
            files.push(copy);
        } else {
            files.push(p);
        }
    }
    let script = "set -e\nfor f in \"$@\"; do . \"$f\"; done\nprintf '%s\\0%s\\0' \"$GRUB_CMDLINE_LINUX\" \"$GRUB_CMDLINE_LINUX_DEFAULT\"\n";
    let out = Command::new(shell)
        .env("LC_ALL", "C")
        .arg("-c")
        .arg(script)
        .arg("grub-mkconfig")
        .args(&files)
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8(out.stdout).unwrap();
    let mut l = text.split('\0');
    Ok((
        l.next().unwrap_or("").to_string(),
        l.next().unwrap_or("").to_string(),
    ))
}

/// GRUB_CMDLINE_LINUX and _DEFAULT as rmp-eval's reader (`parse::shell`) reads `files` in order, Some only
/// when it understood every statement and knows every variable: only then may a test compare it with a shell
/// (the files are then assignments only, safe to source).
pub fn read(files: &[(String, String)]) -> Option<(String, String)> {
    let mut vars = rmp_eval::parse::shell::Vars::default();
    for (name, text) in files {
        rmp_eval::parse::shell::source(name, text, &mut vars).ok()?;
    }
    if vars.first_unknown().is_some() {
        return None;
    }
    let v = |n: &str| vars.value(n).ok().map(str::to_string);
    Some((v("GRUB_CMDLINE_LINUX")?, v("GRUB_CMDLINE_LINUX_DEFAULT")?))
}

/// A root's user files (/etc/default/grub, then grub.d/*.cfg by name, dot files skipped) as `read` takes them;
/// None when one is not UTF-8 or is rmp-eval's own drop-in.
pub fn user_files(root: &Path) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    if let Ok(t) = std::fs::read(root.join("etc/default/grub")) {
        out.push(("/etc/default/grub".to_string(), String::from_utf8(t).ok()?));
    }
    let mut names: Vec<String> = std::fs::read_dir(root.join("etc/default/grub.d"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".cfg") && !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    for n in names {
        if n.ends_with("rmp-eval.cfg") {
            return None;
        }
        let t = std::fs::read(root.join("etc/default/grub.d").join(&n)).ok()?;
        out.push((
            format!("/etc/default/grub.d/{n}"),
            String::from_utf8(t).ok()?,
        ));
    }
    Some(out)
}
