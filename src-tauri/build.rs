//! Generates the app's ACL: one `allow-<command>` permission per command, so each window's
//! capability in tauri.conf.json grants exactly the commands it needs and nothing else.

fn main() {
    let commands = &[
        "app_info",
        "list_projects",
        "add_project",
        "rename_project",
        "remove_project",
        "pick_folder",
        "list_tasks",
        "tasks_needing_you",
        "search_conversations",
        "find_tasks",
        "get_task",
        "create_task",
        "rename_task",
        "delete_task",
        "open_task",
        "close_window",
        "task_view",
        "older_messages",
        "send_message",
        "stop_task",
        "decide_approval",
        "answer_question",
        "set_task_options",
        "restore_checkpoint",
        "render_markdown",
        "find_files",
        "open_link",
        "settings_overview",
        "local_servers",
        "save_provider",
        "remove_provider",
        "set_provider_key",
        "remove_provider_key",
        "test_model",
        "set_model_role",
        "mcp_servers",
        "add_mcp_server",
        "import_mcp_servers",
        "pick_mcp_config",
        "remove_mcp_server",
        "set_mcp_server_enabled",
        "check_mcp_server",
        "project_rules",
        "add_rule",
        "remove_rule",
        "project_settings",
        "save_project_settings",
    ];
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .app_manifest(tauri_build::AppManifest::new().commands(commands)),
    )
    .expect("failed to run tauri-build");
}
