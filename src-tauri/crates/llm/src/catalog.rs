//! The model catalog: context window, output limit, capabilities and prices per model. Ids are
//! `model@provider`. Built-in entries carry list prices as published when they were written;
//! `codewright-cli models add` overrides any of them, and custom providers accept any model name.

use crate::error::SettingError;
use crate::request::Sampling;
use codewright_protocol::Usage;
use serde::{Deserialize, Serialize};

/// US dollars per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pricing {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl Pricing {
    /// What `usage` costs, in US dollars.
    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.input as f64 * self.input
            + usage.output as f64 * self.output
            + usage.cache_read as f64 * self.cache_read
            + usage.cache_write as f64 * self.cache_write)
            / 1_000_000.0
    }
}

/// What Codewright knows about a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    /// `model@provider`.
    pub id: String,
    pub context_window: u64,
    pub max_output: u64,
    pub tools: bool,
    pub images: bool,
    pub thinking: bool,
    pub pricing: Pricing,
    /// False for models the catalog does not know: defaults are assumed and cost shows as 0.
    pub known: bool,
    /// The user's sampling settings for the model (none in the catalog).
    #[serde(default)]
    pub sampling: Sampling,
    /// Whether its chat template takes two user messages in a row, so that a request's last
    /// words can be a turn of their own (a local server says so). Not known: `false` — they are
    /// joined into one, since strict templates (Mistral's, Gemma's) refuse them.
    #[serde(default)]
    pub user_turns_in_a_row: bool,
}

impl ModelInfo {
    /// The model's name at its provider (before the `@`).
    pub fn name(&self) -> &str {
        self.id
            .rsplit_once('@')
            .map_or(self.id.as_str(), |(name, _)| name)
    }

    /// The provider's name (after the `@`).
    pub fn provider(&self) -> &str {
        self.id
            .rsplit_once('@')
            .map_or("", |(_, provider)| provider)
    }

    /// Whether the model is offered the tools natively: it can take them, and its answers are
    /// not constrained to JSON (then its calls are written in the answer).
    pub fn native_tools(&self) -> bool {
        self.tools && !self.sampling.constrained
    }

    /// Defaults for a model the catalog does not know: tools on, 128k context.
    pub fn unknown(id: &str) -> ModelInfo {
        ModelInfo {
            id: id.to_string(),
            context_window: 128_000,
            max_output: 8_192,
            tools: true,
            images: false,
            thinking: false,
            pricing: Pricing::default(),
            known: false,
            sampling: Sampling::default(),
            user_turns_in_a_row: false,
        }
    }
}

/// What a model is used for. Each role can name its own model; an unset role falls back along
/// [`ModelRole::fallbacks`] (compaction → small → main).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelRole {
    /// The agent's model.
    Main,
    /// Cheap, quick jobs (titles, summaries of tool output).
    Small,
    /// Summarising a long conversation when it must be compacted.
    Compaction,
}

impl ModelRole {
    pub const ALL: [ModelRole; 3] = [ModelRole::Main, ModelRole::Small, ModelRole::Compaction];

    pub fn as_str(self) -> &'static str {
        match self {
            ModelRole::Main => "main",
            ModelRole::Small => "small",
            ModelRole::Compaction => "compaction",
        }
    }

    pub fn parse(s: &str) -> Result<ModelRole, SettingError> {
        ModelRole::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| SettingError::Role(s.to_string()))
    }

    /// This role, then the roles it falls back to, in order.
    pub fn fallbacks(self) -> &'static [ModelRole] {
        match self {
            ModelRole::Main => &[ModelRole::Main],
            ModelRole::Small => &[ModelRole::Small, ModelRole::Main],
            ModelRole::Compaction => &[ModelRole::Compaction, ModelRole::Small, ModelRole::Main],
        }
    }

    /// The model for this role: its own if set, else the first set fallback. `chosen` reads a
    /// role's own setting. Returns the model id and the role it came from.
    pub fn resolve(
        self,
        chosen: impl Fn(ModelRole) -> Option<String>,
    ) -> Option<(String, ModelRole)> {
        self.fallbacks()
            .iter()
            .find_map(|r| chosen(*r).map(|m| (m, *r)))
    }

    /// The settings key that holds this role's model.
    pub fn setting_key(self) -> String {
        format!("model.{}", self.as_str())
    }
}

/// Splits `model@provider`, with a message saying what is expected.
pub fn parse_model_id(id: &str) -> Result<(&str, &str), SettingError> {
    match id.rsplit_once('@') {
        Some((model, provider)) if !model.is_empty() && !provider.is_empty() => {
            Ok((model, provider))
        }
        _ => Err(SettingError::ModelId(id.to_string())),
    }
}

/// A catalog row: id, context, max output, tools, images, thinking, and prices per million
/// tokens for input, output, cache read, cache write.
type Row = (&'static str, u64, u64, bool, bool, bool, f64, f64, f64, f64);

/// The built-in catalog.
pub fn builtin_models() -> Vec<ModelInfo> {
    #[rustfmt::skip]
    let rows: &[Row] = &[
        ("gpt-5@openai",                           400_000, 128_000, true, true,  true,  1.25, 10.0, 0.125, 0.0),
        ("gpt-5-mini@openai",                      400_000, 128_000, true, true,  true,  0.25, 2.0,  0.025, 0.0),
        ("gpt-4.1@openai",                       1_047_576,  32_768, true, true,  false, 2.0,  8.0,  0.5,   0.0),
        ("claude-sonnet-4-5@anthropic",            200_000,  64_000, true, true,  true,  3.0,  15.0, 0.30,  3.75),
        ("claude-haiku-4-5@anthropic",             200_000,  64_000, true, true,  true,  1.0,  5.0,  0.10,  1.25),
        ("claude-opus-4-1@anthropic",              200_000,  32_000, true, true,  true,  15.0, 75.0, 1.50,  18.75),
        ("gemini-2.5-pro@google",                1_048_576,  65_536, true, true,  true,  1.25, 10.0, 0.31,  0.0),
        ("gemini-2.5-flash@google",              1_048_576,  65_536, true, true,  true,  0.30, 2.50, 0.075, 0.0),
        ("deepseek-chat@deepseek",                 128_000,   8_192, true, false, false, 0.28, 0.42, 0.028, 0.0),
        ("deepseek-reasoner@deepseek",             128_000,  64_000, true, false, true,  0.28, 0.42, 0.028, 0.0),
        ("kimi-k2-0905-preview@moonshot",          262_144,  16_384, true, false, false, 0.60, 2.50, 0.15,  0.0),
        ("glm-4.6@zhipu",                          200_000, 128_000, true, false, true,  0.60, 2.20, 0.11,  0.0),
        ("MiniMax-M2@minimax",                     204_800, 131_072, true, false, true,  0.30, 1.20, 0.03,  0.0),
        ("openai/gpt-oss-120b@groq",               131_072,  65_536, true, false, true,  0.15, 0.75, 0.0,   0.0),
        ("anthropic/claude-sonnet-4.5@openrouter", 1_000_000, 64_000, true, true, true,  3.0,  15.0, 0.30,  3.75),
    ];
    rows.iter()
        .map(
            |&(
                id,
                context_window,
                max_output,
                tools,
                images,
                thinking,
                input,
                output,
                cache_read,
                cache_write,
            )| ModelInfo {
                id: id.to_string(),
                context_window,
                max_output,
                tools,
                images,
                thinking,
                pricing: Pricing {
                    input,
                    output,
                    cache_read,
                    cache_write,
                },
                known: true,
                sampling: Sampling::default(),
                user_turns_in_a_row: false,
            },
        )
        .collect()
}

/// Looks `id` up: the user's entries first, then the built-in catalog, else defaults.
pub fn resolve_model(id: &str, custom: &[ModelInfo]) -> ModelInfo {
    custom
        .iter()
        .find(|m| m.id == id)
        .cloned()
        .or_else(|| builtin_models().into_iter().find(|m| m.id == id))
        .unwrap_or_else(|| ModelInfo::unknown(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_counts_every_kind_of_token() {
        let sonnet = resolve_model("claude-sonnet-4-5@anthropic", &[]);
        let usage = Usage {
            input: 1_000_000,
            output: 100_000,
            cache_read: 2_000_000,
            cache_write: 10_000,
            reasoning: 0,
            ..Default::default()
        };
        let expected = 3.0 + 1.5 + 0.6 + 0.0375;
        assert!((sonnet.pricing.cost(&usage) - expected).abs() < 1e-9);
    }

    #[test]
    fn unknown_models_get_defaults_and_custom_entries_win() {
        let m = resolve_model("my-finetune@local", &[]);
        assert!(!m.known && m.tools && m.context_window == 128_000);
        assert_eq!((m.name(), m.provider()), ("my-finetune", "local"));
        let mut custom = ModelInfo::unknown("gpt-5@openai");
        custom.context_window = 1000;
        assert_eq!(
            resolve_model("gpt-5@openai", &[custom]).context_window,
            1000
        );
        assert_eq!(
            parse_model_id("openai/gpt-oss-120b@groq").unwrap(),
            ("openai/gpt-oss-120b", "groq")
        );
        assert!(parse_model_id("no-provider")
            .unwrap_err()
            .to_string()
            .contains("MODEL@PROVIDER"));
    }

    #[test]
    fn roles_fall_back_to_smaller_then_main() {
        let set = |r: ModelRole| match r {
            ModelRole::Main => Some("big@p".to_string()),
            _ => None,
        };
        assert_eq!(
            ModelRole::Compaction.resolve(set),
            Some(("big@p".into(), ModelRole::Main))
        );
        let set = |r: ModelRole| (r != ModelRole::Compaction).then(|| format!("{}@p", r.as_str()));
        assert_eq!(
            ModelRole::Compaction.resolve(set),
            Some(("small@p".into(), ModelRole::Small))
        );
        assert_eq!(ModelRole::Main.resolve(|_| None), None);
        assert_eq!(
            ModelRole::parse("tiny"),
            Err(SettingError::Role("tiny".into()))
        );
        assert!(ModelRole::parse("tiny")
            .unwrap_err()
            .to_string()
            .contains("main, small or compaction"));
    }

    #[test]
    fn builtin_ids_are_unique_and_name_builtin_providers() {
        let providers: Vec<String> = crate::builtin_providers()
            .into_iter()
            .map(|p| p.name)
            .collect();
        let models = builtin_models();
        for m in &models {
            assert!(
                providers.iter().any(|p| p == m.provider()),
                "{} names an unknown provider",
                m.id
            );
            assert_eq!(models.iter().filter(|o| o.id == m.id).count(), 1);
        }
    }
}
