//! Real headless Chromium for the console's tests: Debian's `chromium`, driven by
//! `tests/console/browse.mjs` through Playwright's `playwright-core` (no browser download).
//! A test asks [`browser`] first: without Node, the npm package or Chromium it is skipped
//! and says why — unless `CAIRN_REQUIRE_BROWSER` is set (`.ci/run`), when it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The browser script and the Chromium it drives.
#[derive(Debug, Clone)]
pub struct Browser {
    /// `tests/console/browse.mjs`.
    pub script: PathBuf,
    /// `/usr/bin/chromium`.
    pub chromium: PathBuf,
}

/// The browser, or `None` with the reason printed (the test then returns: skipped).
///
/// # Panics
/// When something is missing and `CAIRN_REQUIRE_BROWSER` is set.
#[must_use]
#[allow(
    clippy::panic,
    reason = "test support: a required browser that is missing fails"
)]
pub fn browser(test: &str) -> Option<Browser> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/console");
    let chromium = PathBuf::from("/usr/bin/chromium");
    let missing = if Command::new("node").arg("--version").output().is_err() {
        Some("no `node` on PATH".to_owned())
    } else if !folder.join("node_modules/playwright-core").is_dir() {
        Some("playwright-core is not installed (`npm ci --prefix tests/console`)".to_owned())
    } else if !chromium.is_file() {
        Some("no /usr/bin/chromium (Debian's `chromium` package)".to_owned())
    } else {
        None
    };
    match missing {
        None => Some(Browser {
            script: folder.join("browse.mjs"),
            chromium,
        }),
        Some(reason) if std::env::var_os("CAIRN_REQUIRE_BROWSER").is_some() => {
            panic!("{test}: {reason}, and CAIRN_REQUIRE_BROWSER is set")
        }
        Some(reason) => {
            eprintln!("skipped {test}: {reason}");
            None
        }
    }
}

/// Where screenshots go: `CAIRN_CONSOLE_SHOTS` when set (kept, for the guide), else
/// `fallback` (a temporary folder of the test's). The folder is created.
///
/// # Panics
/// When it cannot be created.
#[must_use]
pub fn shots_dir(fallback: &Path) -> PathBuf {
    let dir = std::env::var_os("CAIRN_CONSOLE_SHOTS")
        .map_or_else(|| fallback.to_path_buf(), PathBuf::from);
    std::fs::create_dir_all(&dir).expect("the screenshots' folder");
    dir
}

impl Browser {
    /// Runs the browser script's `journey` with `args` (`--name value` pairs), screenshots
    /// into `shots`; what it printed on its last line: what a person read on each page, the
    /// URLs the browser requested, the console and page errors, and `ok`.
    ///
    /// # Panics
    /// When the script prints no JSON result.
    #[must_use]
    #[allow(
        clippy::panic,
        reason = "test support: a browser that says nothing fails"
    )]
    pub fn run(&self, journey: &str, args: &[(&str, &str)], shots: &Path) -> serde_json::Value {
        let mut command = Command::new("node");
        command
            .arg(&self.script)
            .args(["--journey", journey])
            .arg("--shots")
            .arg(shots)
            .arg("--chromium")
            .arg(&self.chromium);
        for (name, value) in args {
            command.arg(format!("--{name}")).arg(value);
        }
        let output = command.output().expect("node runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|e| {
            panic!(
                "the browser script printed no result ({e}): {stdout}\n{}",
                String::from_utf8_lossy(&output.stderr)
            )
        })
    }
}

/// The text a person read on the page the script named `page`.
#[must_use]
pub fn page_text<'a>(seen: &'a serde_json::Value, page: &str) -> &'a str {
    seen.pointer(&format!("/pages/{page}/text"))
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
}

/// Asserts what every journey must hold: it finished, nothing failed in a page, and every
/// request stayed with the console at `base` (`http://127.0.0.1:PORT`).
///
/// # Panics
/// When one of them does not hold.
pub fn assert_clean_journey(seen: &serde_json::Value, base: &str) {
    assert_eq!(seen["ok"], true, "{seen:#}");
    assert_eq!(seen["consoleErrors"], serde_json::json!([]), "{seen:#}");
    assert_eq!(seen["pageErrors"], serde_json::json!([]), "{seen:#}");
    let requests = seen["requests"].as_array().expect("requests");
    assert!(!requests.is_empty(), "{seen:#}");
    for url in requests {
        assert!(
            url.as_str()
                .is_some_and(|u| u.starts_with(&format!("{base}/ui"))),
            "a request left the console: {url}"
        );
    }
}
