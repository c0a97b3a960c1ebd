//! `cairn where`: where this project's configuration, store and keys are. The store and the
//! keys live outside the working tree, in the project's state folder under the Cairn home
//! (`$CAIRN_HOME`, else `$XDG_STATE_HOME/cairn`, else `~/.local/state/cairn`), so that
//! `git clean -fdx`, `git stash -a` or cloning the checkout again never reach them; this is
//! how a person finds them.

use serde_json::json;

use crate::context::Context;
use crate::failure::{CliCode, Failure};
use crate::output::Outcome;

/// Runs `cairn where`.
pub fn run(ctx: &Context) -> Result<Outcome, Failure> {
    let cwd = std::env::current_dir().map_err(|e| {
        Failure::new(
            CliCode::IO,
            format!("cannot read the current directory: {e}"),
        )
    })?;
    let project = cairn_runtime::layout::Project::find(&cwd);
    let store = ctx.store_location()?;
    let keys = ctx.keys_dir()?;
    let home = cairn_runtime::layout::cairn_home();
    let mut human = String::new();
    match &project {
        Some(project) => {
            human.push_str(&format!(
                "project        {}\nconfiguration  {}\nstate          {}{}\n",
                project.root().display(),
                project.dir().display(),
                project.state().display(),
                if project.state_is_apart() {
                    " (outside the working tree)"
                } else {
                    " (inside the working tree: a project made before the state moved out; `git clean -fdx` removes it)"
                },
            ));
        }
        None => human.push_str(&format!(
            "project        none at or above {} (`cairn init` or `cairn hooks install` makes one)\n",
            cwd.display()
        )),
    }
    human.push_str(&format!(
        "store          {store}{}\nkeys           {}{}\n",
        if ctx.explicit_store.is_some() {
            " (--store / CAIRN_STORE)"
        } else {
            ""
        },
        keys.display(),
        if ctx.explicit_keys.is_some() {
            " (--keys / CAIRN_KEYS)"
        } else {
            ""
        },
    ));
    if let Some(home) = &home {
        human.push_str(&format!("cairn home     {}\n", home.display()));
    }
    Ok(Outcome::ok(
        json!({
            "project": project.as_ref().map(|p| p.root()),
            "configuration": project.as_ref().map(|p| p.dir()),
            "state": project.as_ref().map(|p| p.state()),
            "state_outside_working_tree": project.as_ref().map(cairn_runtime::layout::Project::state_is_apart),
            "store": store.to_string(),
            "keys": keys,
            "cairn_home": home,
        }),
        human,
    ))
}
