//! /var/lib/dpkg/status: the packages dpkg knows, one deb822 paragraph each ("Field: value" lines, a blank line
//! between paragraphs).

/// The version of `package` when dpkg has it installed ("Status: install ok installed"), its epoch left out.
pub(crate) fn installed_version<'a>(status: &'a str, package: &str) -> Option<&'a str> {
    status.split("\n\n").find_map(|para| {
        let field = |name: &str| {
            para.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':').map(str::trim))
        };
        let installed = field("Status").is_some_and(|s| s.ends_with(" installed"));
        if field("Package") != Some(package) || !installed {
            return None;
        }
        field("Version").map(|v| v.split_once(':').map_or(v, |(_, v)| v))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Debian 12's irqbalance paragraph: the fields of irqbalance_1.9.2-1_amd64.deb (dpkg-deb -f) with the Status
    // line dpkg adds, between dpkg's own paragraph from this build machine's status file and a removed package's.
    const STATUS: &str = "Package: dpkg\nEssential: yes\nStatus: install ok installed\nPriority: required\n\
Version: 1.21.23\nDepends: tar (>= 1.28-1)\n\n\
Package: irqbalance\nStatus: install ok installed\nPriority: optional\nSection: utils\nInstalled-Size: 157\n\
Maintainer: Paride Legovini <paride@debian.org>\nArchitecture: amd64\nVersion: 1.9.2-1\n\
Pre-Depends: init-system-helpers (>= 1.54~)\nConffiles:\n /etc/default/irqbalance 0123abcd\n\n\
Package: tuned\nStatus: deinstall ok config-files\nVersion: 2.19.0-1\nDepends: irqbalance\n";

    #[test]
    fn an_installed_packages_version_and_no_other() {
        assert_eq!(installed_version(STATUS, "irqbalance"), Some("1.9.2-1"));
        assert_eq!(installed_version(STATUS, "dpkg"), Some("1.21.23"));
        // Removed, its configuration kept: not installed.
        assert_eq!(installed_version(STATUS, "tuned"), None);
        assert_eq!(installed_version(STATUS, "irq"), None);
        let epoch = STATUS.replace("Version: 1.9.2-1", "Version: 1:1.7.0-5");
        assert_eq!(installed_version(&epoch, "irqbalance"), Some("1.7.0-5"));
    }
}
