//! /etc/default files: `KEY=VALUE` lines as a shell would read simple assignments (`#` comments, optional single or
//! double quotes around the value). Nothing is expanded: a value is taken as written.

/// The value of the last assignment to `key`, unquoted. None when it is not assigned.
pub(crate) fn get(text: &str, key: &str) -> Option<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("export ").unwrap_or(l);
            let (k, v) = l.split_once('=')?;
            (k.trim_end() == key && !k.starts_with('#')).then(|| unquote(v.trim()))
        })
        .next_back()
}

fn unquote(v: &str) -> String {
    for q in ['"', '\''] {
        if let Some(inner) = v.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return inner.to_string();
        }
    }
    // An unquoted value ends at a comment.
    v.split(" #").next().unwrap_or(v).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignments_as_the_package_ships_and_users_edit_them() {
        let t = include_str!("../../systemd/rmp-eval.default");
        assert_eq!(
            get(t, "RMP_EVAL_MONITOR_RUN_SECONDS").as_deref(),
            Some("10")
        );
        assert_eq!(get(t, "RMP_EVAL_MONITOR_REAPPLY").as_deref(), Some("no"));
        assert_eq!(get(t, "RMP_EVAL_MONITOR_PROMETHEUS").as_deref(), Some(""));
        let edited = "A=1\n# A=2\nA=\"3 4\"\nexport B='x' \nC=5 # five\n";
        assert_eq!(get(edited, "A").as_deref(), Some("3 4"));
        assert_eq!(get(edited, "B").as_deref(), Some("x"));
        assert_eq!(get(edited, "C").as_deref(), Some("5"));
        assert_eq!(get(edited, "D"), None);
    }
}
