//! The shared folder beside the repository (`<repo>/../shared`, or `CAIRN_SHARED_DIR`): the
//! published interop data the suites check Cairn against.

use std::path::PathBuf;

/// Where the shared folder should be.
#[must_use]
pub fn shared_dir_path() -> PathBuf {
    std::env::var_os("CAIRN_SHARED_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
        PathBuf::from,
    )
}

/// The shared folder.
///
/// # Panics
/// When it has no `interop` folder: a test that needs the published data fails rather than
/// passing without it.
#[must_use]
pub fn shared_dir() -> PathBuf {
    let dir = shared_dir_path();
    assert!(
        dir.join("interop").is_dir(),
        "shared folder not found at `{}` (no `interop` folder in it): check it out next to the \
         repository or point CAIRN_SHARED_DIR at it",
        dir.display()
    );
    dir
}

/// The shared folder when it holds `sub`, else `None` after saying, on standard output, that
/// the caller is skipped.
#[must_use]
pub fn shared_dir_with(sub: &str) -> Option<PathBuf> {
    let dir = shared_dir_path();
    if dir.join(sub).is_dir() {
        Some(dir)
    } else {
        println!(
            "skipped: {} not found (set CAIRN_SHARED_DIR)",
            dir.join(sub).display()
        );
        None
    }
}
