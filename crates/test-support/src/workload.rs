//! The shape of a realistic agent run, shared by the benchmarks that write and verify runs.

/// The tools a realistic agent run calls, as `(name, version)`.
pub const TOOLS: [(&str, &str); 6] = [
    ("github.create_issue", "3"),
    ("fs.read_file", "1.2.0"),
    ("fs.write_file", "1.2.0"),
    ("shell.exec", "2"),
    ("http.get", "1"),
    ("slack.post_message", "4.1"),
];

/// Policy rule ids; each step is admitted (or denied) by one to three of them.
pub const RULES: [&str; 7] = [
    "repo.read",
    "repo.write.issues",
    "fs.workspace.read",
    "fs.workspace.write",
    "net.allowlist.github",
    "shell.readonly",
    "support.notify",
];
