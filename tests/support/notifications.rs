//! A private D-Bus session bus and a monitor of the desktop notifications sent on it. No
//! notification server runs: the `Notify` calls are seen (and fail), nothing is shown.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct NotificationBus {
    daemon: Child,
    monitor: Child,
    seen: Arc<Mutex<String>>,
    /// For the app's `DBUS_SESSION_BUS_ADDRESS`.
    pub address: String,
}

/// The app's environment for this bus: its address, and no accessibility bus started on it (that
/// would outlive the test).
impl NotificationBus {
    pub fn env(&self) -> [(&str, &str); 3] {
        [
            ("DBUS_SESSION_BUS_ADDRESS", &self.address),
            ("NO_AT_BRIDGE", "1"),
            ("GTK_A11Y", "none"),
        ]
    }
}

impl NotificationBus {
    pub fn start() -> NotificationBus {
        let (daemon, address) = super::session_bus();
        let mut monitor = Command::new("dbus-monitor")
            .args([
                "--address",
                &address,
                "type='method_call',interface='org.freedesktop.Notifications',member='Notify'",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("dbus-monitor is not installed; run scripts/setup --test");
        let seen = Arc::new(Mutex::new(String::new()));
        let out = monitor.stdout.take().unwrap();
        let sink = seen.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let mut seen = sink.lock().unwrap();
                seen.push_str(&line);
                seen.push('\n');
            }
        });
        let bus = NotificationBus {
            daemon,
            monitor,
            seen,
            address,
        };
        // The monitor prints the name it was given once it listens.
        bus.wait_for("NameAcquired", Duration::from_secs(10));
        bus
    }

    /// Waits until what the monitor saw contains `text`, and returns all it saw.
    pub fn wait_for(&self, text: &str, timeout: Duration) -> String {
        let start = Instant::now();
        loop {
            let seen = self.seen.lock().unwrap().clone();
            if seen.contains(text) {
                return seen;
            }
            assert!(
                start.elapsed() < timeout,
                "no notification with {text:?} was sent; the bus saw:\n{seen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for NotificationBus {
    fn drop(&mut self) {
        let _ = self.monitor.kill();
        let _ = self.monitor.wait();
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}
