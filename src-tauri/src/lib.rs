//! The desktop shell: a thin adapter between the engine crates and the windows. Commands come in
//! (`commands`), the store's change feed goes out as events to every window (`sync`), and task
//! windows are opened and focused here (`windows`). No business logic lives in this crate.

pub mod commands;
mod state;
mod sync;
mod windows;

pub use state::AppState;

use tauri::{Builder, Runtime};

/// Name of the event that carries every [`codewright_protocol::StoreEvent`] to the windows.
pub const STORE_EVENT: &str = "store";

/// Registers Codewright's state, commands and background sync on `builder`. Shared by [`run`]
/// and the mock-runtime tests, so both exercise the same wiring.
pub fn app_builder<R: Runtime>(builder: Builder<R>, state: AppState) -> Builder<R> {
    builder
        .plugin(tauri_plugin_dialog::init())
        .manage(state)
        .setup(|app| {
            sync::start(app.handle());
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![
            commands::app_info,
            commands::list_projects,
            commands::add_project,
            commands::rename_project,
            commands::remove_project,
            commands::pick_folder,
            commands::list_tasks,
            commands::get_task,
            commands::create_task,
            commands::rename_task,
            commands::delete_task,
            commands::open_task,
        ])
}

/// Runs the desktop app on the data folder from `CODEWRIGHT_HOME` or the XDG data dir.
pub fn run() {
    let state = AppState::open_default();
    app_builder(tauri::Builder::default(), state)
        .run(tauri::generate_context!())
        .expect("the window system failed to start Codewright");
}
