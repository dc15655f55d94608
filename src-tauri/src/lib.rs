//! The desktop shell: a thin adapter between the engine crates and the windows. Commands come in
//! (`commands`), the store's change feed goes out as events to every window (`sync`), and task
//! windows are opened and focused here (`windows`). No business logic lives in this crate.

pub mod commands;
mod error;
mod guard;
pub mod markdown;
pub mod settings;
mod state;
mod sync;
pub mod task_window;
pub mod tree;
mod webkit;
mod windows;
pub mod worktrees;

pub use state::AppState;

use tauri::{Builder, Manager, Runtime};

/// Name of the event that carries every [`codewright_protocol::StoreEvent`] to the windows.
pub const STORE_EVENT: &str = "store";
/// Name of the event that carries a task's [`codewright_protocol::AgentEvent`]s to its window.
pub const AGENT_EVENT: &str = "agent";
/// Name of the event that asks an open task window to show one of its messages (a search's
/// match) or its Changes view: a [`windows::Show`].
pub const REVEAL_EVENT: &str = "reveal";
/// Every event the backend sends to windows (written into `ui/js/protocol.js`).
pub const EVENTS: &[&str] = &[
    STORE_EVENT,
    AGENT_EVENT,
    REVEAL_EVENT,
    tree::TREE_EVENT,
    tree::ATTACH_EVENT,
    worktrees::STANDING_EVENT,
    windows::ADOPT_EVENT,
];

/// Registers Codewright's state, commands and background sync on `builder`. Shared by [`run`]
/// and the mock-runtime tests, so both exercise the same wiring.
pub fn app_builder<R: Runtime>(builder: Builder<R>, state: AppState) -> Builder<R> {
    builder
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_notification::init())
        .manage(state)
        .manage(tree::TreeState::default())
        .manage(windows::Windows::default())
        .manage(worktrees::Standings::default())
        .on_window_event(|window, event| match event {
            tauri::WindowEvent::Focused(true) => {
                if let Some(task) = windows::task_of(window.app_handle(), window.label()) {
                    window.state::<tree::TreeState>().focused(task);
                } else if window.label() == "main" {
                    // Files may have been edited by hand while it was behind.
                    window.state::<worktrees::Standings>().refresh();
                }
            }
            tauri::WindowEvent::Destroyed => {
                if window.label() == "main" {
                    window.state::<worktrees::Standings>().stop();
                }
                windows::forget(window.app_handle(), window.label())
            }
            _ => {}
        })
        .setup(|app| {
            sync::start(app.handle());
            sync::forward_agent_events(app.handle());
            // A spare task window, so that the first task opened opens at once.
            let handle = app.handle().clone();
            tauri::async_runtime::spawn(async move {
                tokio::time::sleep(windows::SPARE_AFTER_START).await;
                windows::prepare_spare(&handle);
            });
            Ok(())
        })
        .invoke_handler(guarded(tauri::generate_handler![
            commands::app_info,
            commands::list_projects,
            commands::add_project,
            commands::rename_project,
            commands::remove_project,
            commands::pick_folder,
            commands::list_tasks,
            commands::tasks_needing_you,
            commands::search_conversations,
            commands::find_tasks,
            tree::list_folder,
            tree::watch_tree,
            tree::open_file,
            tree::attach_file,
            commands::get_task,
            commands::create_task,
            commands::rename_task,
            commands::delete_task,
            commands::open_task,
            commands::close_window,
            commands::task_files,
            commands::implement_task_file,
            commands::spare_ready,
            worktrees::follow_standings,
            worktrees::task_changes,
            worktrees::folder_changes,
            worktrees::revert_change,
            worktrees::send_review,
            worktrees::draft_commit_message,
            worktrees::commit_task,
            worktrees::merge_task,
            worktrees::discard_task,
            worktrees::restore_task,
            worktrees::resolve_conflicts,
            worktrees::draft_pull_request,
            worktrees::open_pull_request,
            worktrees::pull_request_checks,
            task_window::task_view,
            task_window::older_messages,
            task_window::send_message,
            task_window::task_commands,
            task_window::task_skills,
            task_window::switch_skill,
            task_window::rank_skill,
            task_window::task_agents,
            task_window::choose_agent,
            task_window::sub_agent_work,
            task_window::compact_task,
            task_window::task_mcp_servers,
            task_window::new_sibling_task,
            task_window::task_memory,
            task_window::save_memory,
            task_window::stop_task,
            task_window::decide_approval,
            task_window::answer_question,
            task_window::set_task_options,
            task_window::restore_checkpoint,
            task_window::render_markdown,
            task_window::find_files,
            task_window::open_link,
            settings::settings_overview,
            settings::local_servers,
            settings::save_provider,
            settings::remove_provider,
            settings::set_provider_key,
            settings::remove_provider_key,
            settings::test_model,
            settings::set_model_role,
            settings::mcp_servers,
            settings::add_mcp_server,
            settings::import_mcp_servers,
            settings::pick_mcp_config,
            settings::remove_mcp_server,
            settings::set_mcp_server_enabled,
            settings::set_mcp_call_timeout,
            settings::check_mcp_server,
            settings::project_rules,
            settings::add_rule,
            settings::remove_rule,
            settings::project_settings,
            settings::save_project_settings,
            settings::project_trust,
            settings::set_project_trusted,
            settings::app_settings,
            settings::save_app_settings,
            settings::model_catalog,
            settings::save_model,
            settings::remove_model,
        ]))
}

/// Every command passes the guard first (a task window acts only on its own task).
fn guarded<R: Runtime>(
    handler: impl Fn(tauri::ipc::Invoke<R>) -> bool + Send + Sync + 'static,
) -> impl Fn(tauri::ipc::Invoke<R>) -> bool + Send + Sync + 'static {
    move |invoke| match guard::check(&invoke) {
        Ok(()) => handler(invoke),
        Err(refused) => {
            invoke.resolver.reject(refused);
            true
        }
    }
}

/// One app per data folder: launched again on the same folder, Codewright hands over to the
/// running one (whose main window comes to the front, or opens again if it was closed while task
/// windows stayed open) and exits. Found through the D-Bus session bus, under
/// a name made from the folder; without a session bus every launch runs on its own, and says so.
fn single_instance<R: Runtime>(home: &std::path::Path) -> tauri::plugin::TauriPlugin<R> {
    use std::hash::{Hash, Hasher};
    let bus = std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some()
        || std::env::var_os("XDG_RUNTIME_DIR")
            .is_some_and(|dir| std::path::Path::new(&dir).join("bus").exists());
    if !bus {
        eprintln!(
            "codewright: no D-Bus session bus, so launching Codewright again opens a second app on the same data instead of bringing this one to the front"
        );
    }
    let mut hash = std::collections::hash_map::DefaultHasher::new();
    home.hash(&mut hash);
    tauri_plugin_single_instance::Builder::new()
        .dbus_id(format!("dev.codewright.app.d{:016x}", hash.finish()))
        .callback(|app, _args, _cwd| match app.get_webview_window("main") {
            Some(main) => {
                let _ = main.unminimize();
                let _ = main.show();
                let _ = main.set_focus();
            }
            // Closed while task windows stayed open: it opens again.
            None => {
                let config = app.config().app.windows.iter().find(|w| w.label == "main");
                if let Some(config) = config {
                    if let Err(e) = tauri::WebviewWindowBuilder::from_config(app, config)
                        .and_then(|b| b.build())
                    {
                        eprintln!("codewright: cannot open the main window again: {e}");
                    }
                }
            }
        })
        .build()
}

/// Runs the desktop app on the data folder from `CODEWRIGHT_HOME` or the XDG data dir.
pub fn run() {
    codewright_host::protect_own_environment();
    webkit::configure();
    // Set when this process was started again because the running app did not answer.
    const ON_ITS_OWN: &str = "CODEWRIGHT_START_ON_ITS_OWN";
    let on_its_own = std::env::var_os(ON_ITS_OWN).is_some();
    std::env::remove_var(ON_ITS_OWN); // not passed on to commands
    let state = AppState::open_default();
    let builder = if on_its_own {
        tauri::Builder::default()
    } else {
        tauri::Builder::default().plugin(single_instance(state.home()))
    };
    let app = match app_builder(builder, state).build(tauri::generate_context!()) {
        Ok(app) => app,
        // The running app held its name but did not answer (it was quitting): start again, on
        // our own, in a fresh process.
        Err(tauri::Error::PluginInitialization(plugin, why)) if plugin == "single-instance" => {
            use std::os::unix::process::CommandExt;
            eprintln!("codewright: the running Codewright did not answer ({why}); starting anew");
            let exe = std::env::current_exe().expect("the app's own path");
            let error = std::process::Command::new(exe)
                .args(std::env::args_os().skip(1))
                .envs(codewright_host::taken_secrets())
                .env(ON_ITS_OWN, "1")
                .exec();
            panic!("Codewright could not start again: {error}");
        }
        Err(e) => panic!("the window system failed to start Codewright: {e}"),
    };
    app.run(|app, event| {
        // Runs stop, and MCP servers and background commands end, with the app.
        if let tauri::RunEvent::Exit = event {
            // A launch while this one winds down starts anew rather than handing over to it.
            tauri_plugin_single_instance::destroy(app);
            if let Ok(host) = app.state::<AppState>().host() {
                tauri::async_runtime::block_on(host.shutdown());
            }
        }
    });
}
