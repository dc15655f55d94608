//! Custom providers, model overrides and user settings (plain rows and JSON values; the `llm`
//! crate and the front ends give them meaning).

use crate::{now_ms, Result, Store, StoreError};
use rusqlite::{params, OptionalExtension};

/// A provider the user added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderRow {
    pub name: String,
    /// Wire protocol name (`openai`, `openai-responses`, `anthropic`, `gemini`).
    pub protocol: String,
    pub base_url: String,
    pub api_key_env: Option<String>,
    /// How long the provider may take to start answering (ms); `None`: the default.
    pub first_byte_timeout_ms: Option<i64>,
    /// How long it may pause between two chunks of an answer (ms); `None`: the default.
    pub idle_timeout_ms: Option<i64>,
}

/// A model the user added or overrode, `name@provider`.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRow {
    pub id: String,
    pub context_window: u64,
    pub max_output: u64,
    pub tools: bool,
    pub images: bool,
    pub thinking: bool,
    /// US dollars per million tokens.
    pub input_price: f64,
    pub output_price: f64,
    pub cache_read_price: f64,
    pub cache_write_price: f64,
    /// Sampling sent with every request; `None` leaves the server's default.
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub seed: Option<u32>,
    /// Answers constrained to one tool call or a final answer (a local server's grammar).
    pub constrained: bool,
}

impl Store {
    /// The providers the user added, by name.
    pub fn custom_providers(&self) -> Result<Vec<ProviderRow>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT name, protocol, base_url, api_key_env, first_byte_timeout_ms, idle_timeout_ms
             FROM providers ORDER BY name",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(ProviderRow {
                name: r.get(0)?,
                protocol: r.get(1)?,
                base_url: r.get(2)?,
                api_key_env: r.get(3)?,
                first_byte_timeout_ms: r.get(4)?,
                idle_timeout_ms: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Adds or replaces a custom provider.
    pub fn save_provider(&self, p: &ProviderRow) -> Result<()> {
        self.conn.execute(
            "INSERT INTO providers (name, protocol, base_url, api_key_env, created_at, first_byte_timeout_ms, idle_timeout_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT(name) DO UPDATE SET protocol = ?2, base_url = ?3, api_key_env = ?4,
                 first_byte_timeout_ms = ?6, idle_timeout_ms = ?7",
            params![
                p.name,
                p.protocol,
                p.base_url,
                p.api_key_env,
                now_ms(),
                p.first_byte_timeout_ms,
                p.idle_timeout_ms
            ],
        )?;
        Ok(())
    }

    /// Removes a custom provider.
    pub fn remove_provider(&self, name: &str) -> Result<()> {
        if self
            .conn
            .execute("DELETE FROM providers WHERE name = ?1", [name])?
            == 0
        {
            return Err(StoreError::Invalid(format!(
                "there is no custom provider named '{name}' (built-in providers cannot be removed); see `codewright-cli providers list`"
            )));
        }
        Ok(())
    }

    /// The models the user added or overrode, by id.
    pub fn custom_models(&self) -> Result<Vec<ModelRow>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, context_window, max_output, tools, images, thinking, input_price, output_price,
                    cache_read_price, cache_write_price, temperature, top_p, seed, constrained FROM models ORDER BY id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(ModelRow {
                id: r.get(0)?,
                context_window: r.get::<_, i64>(1)? as u64,
                max_output: r.get::<_, i64>(2)? as u64,
                tools: r.get(3)?,
                images: r.get(4)?,
                thinking: r.get(5)?,
                input_price: r.get(6)?,
                output_price: r.get(7)?,
                cache_read_price: r.get(8)?,
                cache_write_price: r.get(9)?,
                temperature: r.get(10)?,
                top_p: r.get(11)?,
                seed: r.get(12)?,
                constrained: r.get(13)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Adds or replaces a model entry.
    pub fn save_model(&self, m: &ModelRow) -> Result<()> {
        self.conn.execute(
            "INSERT INTO models (id, context_window, max_output, tools, images, thinking, input_price, output_price,
                                 cache_read_price, cache_write_price, created_at, temperature, top_p, seed, constrained)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
             ON CONFLICT(id) DO UPDATE SET context_window = ?2, max_output = ?3, tools = ?4, images = ?5,
                 thinking = ?6, input_price = ?7, output_price = ?8, cache_read_price = ?9, cache_write_price = ?10,
                 temperature = ?12, top_p = ?13, seed = ?14, constrained = ?15",
            params![
                m.id,
                m.context_window as i64,
                m.max_output as i64,
                m.tools,
                m.images,
                m.thinking,
                m.input_price,
                m.output_price,
                m.cache_read_price,
                m.cache_write_price,
                now_ms(),
                m.temperature,
                m.top_p,
                m.seed,
                m.constrained
            ],
        )?;
        Ok(())
    }

    /// Removes a model entry of the user's (a catalog model it changed goes back to the
    /// catalog's figures). `false` if there was none.
    pub fn remove_model(&self, id: &str) -> Result<bool> {
        Ok(self
            .conn
            .execute("DELETE FROM models WHERE id = ?1", [id])?
            > 0)
    }
}

impl Store {
    /// A user setting (JSON), if set.
    pub fn setting(&self, key: &str) -> Result<Option<serde_json::Value>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT value FROM settings WHERE key = ?1")?;
        let value: Option<String> = stmt.query_row([key], |r| r.get(0)).optional()?;
        Ok(value.and_then(|v| serde_json::from_str(&v).ok()))
    }

    /// Sets a user setting; `None` removes it.
    pub fn set_setting(&self, key: &str, value: Option<&serde_json::Value>) -> Result<()> {
        match value {
            Some(v) => self.conn.execute(
                "INSERT INTO settings (key, value, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT(key) DO UPDATE SET value = ?2, updated_at = ?3",
                params![key, v.to_string(), now_ms()],
            )?,
            None => self
                .conn
                .execute("DELETE FROM settings WHERE key = ?1", [key])?,
        };
        Ok(())
    }
}
