//! A minimal W3C WebDriver client over std's TcpStream: just what the end-to-end tests use.
//! (A full client crate would compile the tauri/wry graph a second time with other features.)

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// One WebDriver session: one launch of the app.
pub struct Session {
    port: u16,
    id: String,
}

/// An element found in the current window.
pub struct Element<'s> {
    session: &'s Session,
    id: String,
}

/// Sends one HTTP request to the driver and returns the JSON `value` of the reply.
fn request(port: u16, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
    let mut stream =
        TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    // No `Connection: close`: tauri-driver forwards it and resets its pooled upstream connection.
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body.as_bytes()))
        .map_err(|e| format!("send: {e}"))?;
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader
        .read_line(&mut status)
        .map_err(|e| format!("read: {e}"))?;
    let (mut length, mut chunked) = (None, false);
    loop {
        let mut line = String::new();
        reader
            .read_line(&mut line)
            .map_err(|e| format!("read: {e}"))?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse::<usize>().ok();
        }
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
    }
    let mut raw = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader
                .read_line(&mut size)
                .map_err(|e| format!("read: {e}"))?;
            let size = usize::from_str_radix(size.trim(), 16).map_err(|e| format!("chunk: {e}"))?;
            let mut chunk = vec![0; size + 2];
            reader
                .read_exact(&mut chunk)
                .map_err(|e| format!("read: {e}"))?;
            if size == 0 {
                break;
            }
            raw.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(length) = length {
        raw.resize(length, 0);
        reader
            .read_exact(&mut raw)
            .map_err(|e| format!("read: {e}"))?;
    } else {
        reader
            .read_to_end(&mut raw)
            .map_err(|e| format!("read: {e}"))?;
    }
    let reply: Value = serde_json::from_slice(&raw).map_err(|e| {
        format!(
            "{status}: bad JSON ({e}): {}",
            String::from_utf8_lossy(&raw)
        )
    })?;
    if !status.contains(" 200") {
        return Err(format!(
            "{method} {path}: {} {}",
            status.trim(),
            reply["value"]
        ));
    }
    Ok(reply["value"].clone())
}

/// Where a freshly started tauri-driver is.
pub enum DriverState {
    /// It answers, and so does the WebKitWebDriver behind it.
    Answering,
    /// Not answering yet.
    Starting,
    /// It, or the WebKitWebDriver it started, has quit (why): it will never answer.
    Gone(String),
}

/// Asks the tauri-driver `driver`, started to serve `port`, whether it answers.
pub fn driver_state(port: u16, driver: &mut std::process::Child) -> DriverState {
    // First whether both still run: once its WebKitWebDriver quit, tauri-driver would forward
    // to whatever took that one's port.
    if let Ok(Some(status)) = driver.try_wait() {
        return DriverState::Gone(format!("it quit ({status})"));
    }
    // tauri-driver never waits for its WebKitWebDriver: one that quit stays a zombie.
    let quit_child = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .find_map(|entry| {
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let (name, rest) = stat.rsplit_once(')')?;
            let mut fields = rest.split_whitespace();
            let state = fields.next()?;
            let parent: u32 = fields.next()?.parse().ok()?;
            (parent == driver.id() && state == "Z")
                .then(|| name.rsplit_once('(').map_or(name, |n| n.1).to_string())
        });
    match quit_child {
        Some(name) => DriverState::Gone(format!("its {name} quit")),
        None if request(port, "GET", "/status", None).is_ok() => DriverState::Answering,
        None => DriverState::Starting,
    }
}

impl Session {
    /// Launches `application` (a Tauri app binary) in a new session.
    pub fn start(port: u16, application: &str) -> Result<Session, String> {
        let caps = json!({"capabilities": {"alwaysMatch": {"tauri:options": {"application": application}}}});
        let value = request(port, "POST", "/session", Some(&caps))?;
        Ok(Session {
            port,
            id: value["sessionId"].as_str().expect("session id").to_string(),
        })
    }

    fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        request(
            self.port,
            method,
            &format!("/session/{}{path}", self.id),
            body.as_ref(),
        )
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the current window.
    pub fn js(&self, script: &str, args: Value) -> Value {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
        .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// Runs an async script: it must call `arguments[arguments.length - 1](result)`.
    pub fn js_async(&self, script: &str, args: Value) -> Value {
        self.cmd(
            "POST",
            "/execute/async",
            Some(json!({"script": script, "args": args})),
        )
        .unwrap_or_else(|e| panic!("async script failed: {e}\n{script}"))
    }

    /// Finds an element by CSS selector, waiting up to 10 s for it to exist.
    /// Clicks what `css` finds. A page that re-renders (the main window's task list, when
    /// another process changes a task) may replace the element between the finding and the
    /// click — WebDriver's "stale element reference" —; it is then found again and clicked, as a
    /// person clicks what is there now.
    pub fn click(&self, css: &str) {
        let start = Instant::now();
        loop {
            let element = self.find(css);
            element.wait_still();
            match self.cmd(
                "POST",
                &format!("/element/{}/click", element.id),
                Some(json!({})),
            ) {
                Ok(_) => return,
                Err(e)
                    if e.contains("stale element") && start.elapsed() < Duration::from_secs(10) => {
                }
                Err(e) => panic!("click {css}: {e}"),
            }
        }
    }

    pub fn find(&self, css: &str) -> Element<'_> {
        let start = Instant::now();
        loop {
            match self.cmd(
                "POST",
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            ) {
                Ok(v) => {
                    return Element {
                        session: self,
                        id: v[ELEMENT_KEY]
                            .as_str()
                            .unwrap_or_else(|| panic!("bad element reply for {css}: {v}"))
                            .to_string(),
                    }
                }
                Err(e) if start.elapsed() > Duration::from_secs(10) => {
                    panic!("no element {css}: {e}")
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    /// Polls `check` (a script returning a value) until `accept` holds, for up to `timeout`.
    pub fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        script: &str,
        accept: impl Fn(&Value) -> bool,
    ) -> Value {
        let start = Instant::now();
        loop {
            let value = self.js(script, json!([]));
            if accept(&value) {
                return value;
            }
            if start.elapsed() >= timeout {
                let witness = self.witness(what);
                panic!("timed out waiting for {what}; last value: {value}\n{witness}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Starts keeping what a person's input did in the current page — each pointer press,
    /// click, key, focus change and form submission, with its target and where — so that a
    /// wait that fails afterwards can say what happened (see `witness`).
    pub fn record_input(&self) {
        self.js(
            "if (window.__input) return; const log = window.__input = []; \
             const name = (t) => t instanceof Element \
               ? t.tagName.toLowerCase() + (t.id ? '#' + t.id : '') + (t.className && typeof t.className === 'string' ? '.' + t.className.trim().split(/\\s+/).join('.') : '') \
               : String(t); \
             for (const type of ['pointerdown', 'mousedown', 'click', 'keydown', 'focusin', 'submit', 'invalid']) \
               document.addEventListener(type, (e) => { \
                 log.push([Math.round(performance.now()), type, name(e.target), e.clientX ?? null, e.clientY ?? null, e.key ?? null]); \
                 if (log.length > 200) log.shift(); }, true);",
            json!([]),
        );
    }

    /// What the page looks like when a wait fails: a screenshot saved as
    /// `failed-<what>.png` next to the others, the focused element, the scroll position and the
    /// input recorded since `record_input`. Best effort: the page may be gone.
    fn witness(&self, what: &str) -> String {
        let name: String = what
            .chars()
            .map(|c| if c.is_alphanumeric() { c } else { '-' })
            .collect();
        let shot = self.try_screenshot().and_then(|png| {
            super::write_screenshot(&format!("failed-{name}"), &png)
                .map(|path| path.display().to_string())
                .map_err(|e| e.to_string())
        });
        let state = self
            .cmd(
                "POST",
                "/execute/sync",
                Some(json!({"script": "const a = document.activeElement; return JSON.stringify({ \
                    active: a ? a.tagName.toLowerCase() + (a.id ? '#' + a.id : '') : null, \
                    scrolled: [...document.querySelectorAll('*')].filter((e) => e.scrollTop > 0) \
                      .map((e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + ' ' + e.scrollTop), \
                    size: [innerWidth, innerHeight], input: window.__input ?? null })", "args": []})),
            )
            .map(|v| v.as_str().unwrap_or_default().to_string())
            .unwrap_or_else(|e| format!("(no page state: {e})"));
        let shot = shot.unwrap_or_else(|e| format!("(none: {e})"));
        format!("screenshot: {shot}\npage: {state}")
    }

    /// The windows a person can see: every window but the spare task window the app keeps
    /// hidden, ahead of time, until a task is opened in it (and a window already closing).
    /// Visits each window to tell, then comes back to the current one.
    pub fn window_handles(&self) -> Vec<String> {
        let all = self
            .cmd("GET", "/window/handles", None)
            .expect("window handles");
        let current = self.cmd("GET", "/window", None).ok();
        let shown = all
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h.as_str().unwrap().to_string())
            .filter(|h| self.shows_something(h))
            .collect();
        if let Some(Value::String(current)) = current {
            let _ = self.cmd("POST", "/window", Some(json!({"handle": current})));
        }
        shown
    }

    /// Every window the app has, the hidden spare task window included.
    #[allow(dead_code)] // not every test binary looks for the spare
    pub fn all_window_handles(&self) -> Vec<String> {
        let all = self
            .cmd("GET", "/window/handles", None)
            .expect("window handles");
        all.as_array()
            .unwrap()
            .iter()
            .map(|h| h.as_str().unwrap().to_string())
            .collect()
    }

    /// Switches to the window `handle`, unless it is gone; whether it did.
    pub fn try_switch_to(&self, handle: &str) -> bool {
        self.cmd("POST", "/window", Some(json!({"handle": handle})))
            .is_ok()
    }

    /// Whether the window `handle` is one a person sees: not a spare task window (its page,
    /// `task.html` without a task id, or not loaded yet) and not gone.
    fn shows_something(&self, handle: &str) -> bool {
        if !self.try_switch_to(handle) {
            return false;
        }
        match self.cmd("GET", "/url", None) {
            Ok(Value::String(url)) => {
                let spare =
                    url == "about:blank" || (url.contains("task.html") && !url.contains("id="));
                !spare
            }
            _ => false,
        }
    }

    pub fn current_window(&self) -> String {
        self.cmd("GET", "/window", None)
            .expect("current window")
            .as_str()
            .unwrap()
            .to_string()
    }

    pub fn switch_to(&self, handle: &str) {
        self.cmd("POST", "/window", Some(json!({"handle": handle})))
            .expect("switch window");
    }

    /// Waits (up to `timeout`) for a window not among `before` (the handles before whatever
    /// opens it), switches to it and waits until its page says it is ready; returns its handle.
    pub fn switch_to_new_window(&self, before: &[String], timeout: Duration) -> String {
        let start = Instant::now();
        let handle = loop {
            if let Some(new) = self
                .window_handles()
                .into_iter()
                .find(|h| !before.contains(h))
            {
                break new;
            }
            assert!(start.elapsed() < timeout, "no new window opened");
            std::thread::sleep(Duration::from_millis(50));
        };
        self.switch_to(&handle);
        self.wait_until(
            "the new window to render",
            timeout,
            "return document.body.dataset.ready === 'true'",
            |v| v == true,
        );
        handle
    }

    /// Resizes the current window (its outer size; the window's minimum still holds).
    pub fn set_size(&self, width: u32, height: u32) {
        self.cmd(
            "POST",
            "/window/rect",
            Some(json!({"width": width, "height": height})),
        )
        .expect("set the window size");
        // The page takes the new size a moment later: a click meanwhile would aim at where an
        // element was laid out in the old size (a person sees the window change first).
        self.wait_until(
            "the page to take the window's new size",
            Duration::from_secs(10),
            &format!("return window.innerWidth === {width} && window.innerHeight === {height}"),
            |v| v == true,
        );
    }

    /// A PNG screenshot of the current window.
    ///
    /// WebKitWebDriver takes it after the page's next presentation, and a page painted without
    /// compositing (the app's choice on a machine without a GPU, as here) presents only when
    /// something changes: a still page would never be taken. So a pixel nobody can see changes
    /// every frame until the screenshot is back.
    pub fn screenshot(&self) -> Vec<u8> {
        self.try_screenshot().expect("screenshot")
    }

    /// [`Session::screenshot`], or why not.
    fn try_screenshot(&self) -> Result<Vec<u8>, String> {
        use base64::Engine;
        let script = |script: &str| {
            self.cmd(
                "POST",
                "/execute/sync",
                Some(json!({"script": script, "args": []})),
            )
        };
        script(
            "const d = document.createElement('div'); d.id = 'screenshot-tick'; \
             d.style.cssText = 'position:fixed;left:0;top:0;width:1px;height:1px;pointer-events:none'; \
             document.documentElement.append(d); let n = 0; \
             const tick = () => { if (!d.isConnected) return; \
               d.style.background = n++ % 2 ? 'rgba(0,0,0,0.01)' : 'rgba(0,0,0,0.02)'; requestAnimationFrame(tick); }; \
             requestAnimationFrame(tick);",
        )?;
        let b64 = self.cmd("GET", "/screenshot", None);
        script("document.getElementById('screenshot-tick')?.remove()")?;
        base64::engine::general_purpose::STANDARD
            .decode(b64?.as_str().unwrap_or_default())
            .map_err(|e| e.to_string())
    }

    /// Ends the session, which quits the app.
    pub fn quit(self) {
        let _ = self.cmd("DELETE", "", None);
    }
}

impl Element<'_> {
    /// Waits until the element has stopped moving (the same place over three looks, a frame or
    /// 50 ms apart, at most 2 s): WebKit may scroll a page a moment after a key or a focus (to
    /// show the caret), and a click aimed before that lands where the element was — a person
    /// clicks what they see once it is still.
    fn wait_still(&self) {
        self.session.js_async(
            "const [el, done] = arguments; let last = null, same = 0; const start = Date.now();
             const next = (f) => { let fired = false; const go = () => { if (!fired) { fired = true; f(); } };
                                   requestAnimationFrame(go); setTimeout(go, 50); };
             const look = () => {
               if (!el.isConnected) return done(false);
               const r = el.getBoundingClientRect();
               const now = [r.x, r.y, r.width, r.height].join();
               same = now === last ? same + 1 : 0;
               last = now;
               if (same >= 2 || Date.now() - start > 2000) done(same >= 2); else next(look);
             };
             look();",
            json!([{ELEMENT_KEY: self.id}]),
        );
    }

    /// Whether this very element is still in the page (not replaced by a re-render).
    pub fn attached(&self) -> bool {
        match self.session.cmd(
            "POST",
            "/execute/sync",
            Some(json!({"script": "return arguments[0].isConnected", "args": [self.reference()]})),
        ) {
            Ok(connected) => connected == true,
            Err(e) if e.contains("stale element") => false,
            Err(e) => panic!("is the element still there: {e}"),
        }
    }

    /// The element as a script's argument.
    pub fn reference(&self) -> Value {
        json!({ELEMENT_KEY: self.id})
    }

    pub fn click(&self) {
        self.wait_still();
        self.session
            .cmd(
                "POST",
                &format!("/element/{}/click", self.id),
                Some(json!({})),
            )
            .expect("click");
    }

    /// Moves the pointer over the element's centre, as a person's mouse does (and leaves it there).
    pub fn hover(&self) {
        self.hover_at(0, 0);
    }

    /// Moves the pointer to `(x, y)` from the element's centre.
    pub fn hover_at(&self, x: i64, y: i64) {
        self.wait_still();
        self.session
            .cmd(
                "POST",
                "/actions",
                Some(json!({"actions": [{
                    "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
                    "actions": [{"type": "pointerMove", "duration": 0, "origin": self.reference(), "x": x, "y": y}]
                }]})),
            )
            .expect("pointer move");
    }

    /// Moves the pointer a little over the element, again and again, as a hand aiming at it
    /// does, until `seen` (asked after each move; its asserts are what must hold meanwhile)
    /// gives a value — or fails after `timeout` saying `what` never came.
    pub fn aim_until<T>(
        &self,
        what: &str,
        timeout: Duration,
        mut seen: impl FnMut() -> Option<T>,
    ) -> T {
        let start = Instant::now();
        let mut x = 0;
        loop {
            x = 3 - x;
            self.hover_at(x, 0);
            if let Some(found) = seen() {
                return found;
            }
            assert!(start.elapsed() < timeout, "{what} never came");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn clear(&self) {
        self.session
            .cmd(
                "POST",
                &format!("/element/{}/clear", self.id),
                Some(json!({})),
            )
            .expect("clear");
    }

    /// Sends keys once, without retrying: for keys that close the window (the answer may then
    /// be an error even though the keys arrived).
    pub fn send_keys_once(&self, text: &str) {
        let _ = self.session.cmd(
            "POST",
            &format!("/element/{}/value", self.id),
            Some(json!({"text": text})),
        );
    }

    /// Types into a text field. WebKitWebDriver now and then answers a key-send with a bare 500
    /// while the window is still settling; the field is then cleared and typed again.
    pub fn type_text(&self, text: &str) {
        let send = || {
            self.session.cmd(
                "POST",
                &format!("/element/{}/value", self.id),
                Some(json!({"text": text})),
            )
        };
        let mut last = send();
        for _ in 0..3 {
            if last.is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(300));
            self.clear();
            last = send();
        }
        last.expect("send keys");
    }

    pub fn text(&self) -> String {
        let v = self
            .session
            .cmd("GET", &format!("/element/{}/text", self.id), None)
            .expect("text");
        v.as_str().unwrap_or_default().to_string()
    }

    /// What a text field holds now.
    pub fn value(&self) -> String {
        let v = self
            .session
            .cmd("GET", &format!("/element/{}/property/value", self.id), None)
            .expect("value");
        v.as_str().unwrap_or_default().to_string()
    }
}
