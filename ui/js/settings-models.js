// The settings page's models: the catalog and the user's own (context window, longest answer,
// tools, images, prices, sampling), narrowed by typing; a form adds one or changes one (a local model's
// real window, say) and the user's can be removed. The backend checks the form and names the
// wrong field; the roles above choose from the same list.

import { call, messageOf } from './api.js';
import { $, h, toast } from './dom.js';
import { tokens } from './format.js';

const page = { models: [], onChange: () => {} };

const price = (usd) => (usd ? `$${usd.toFixed(usd < 1 ? 3 : 2).replace(/0+$/, '').replace(/\.$/, '')}` : '—');

/** Reads the models again; `onChange` runs after a model is saved or removed (the roles). */
export async function refreshModels(onChange = page.onChange) {
  page.onChange = onChange;
  page.models = await call('model_catalog');
  render();
}

function render() {
  const words = $('#models-filter').value.trim().toLowerCase().split(/\s+/).filter(Boolean);
  const shown = page.models.filter((m) => words.every((w) => m.id.toLowerCase().includes(w)));
  $('#models-count').textContent = `${shown.length} of ${page.models.length} models`;
  $('#models-list').replaceChildren(...shown.map((m) =>
    h('tr', { dataset: { id: m.id } },
      h('th', { scope: 'row', class: 'model-id', title: m.id, text: m.id }),
      // A local model described without its window: its server says, when it is used.
      h('td', { text: m.known ? tokens(m.contextWindow) : 'from its server' }),
      h('td', { text: m.known ? tokens(m.maxOutput) : 'from its server' }),
      h('td', { text: [m.tools ? (m.sampling?.constrained ? 'tools, constrained' : 'tools') : 'no tools', m.images ? 'images' : null].filter(Boolean).join(', ') }),
      h('td', { text: `${price(m.pricing.input)} / ${price(m.pricing.output)}` }),
      h('td', { class: 'model-actions' },
        h('button', { type: 'button', class: 'button small', text: 'Change', 'aria-label': `Change ${m.id}`, onclick: () => edit(m) }),
        m.custom
          ? h('button', { type: 'button', class: 'button small danger-outline', text: 'Remove', title: 'Remove your entry (a catalog model keeps the catalog’s figures)', 'aria-label': `Remove your entry for ${m.id}`, onclick: () => remove(m.id) })
          : null))));
}

/** Fills the form with a model's figures, to change them. */
function edit(m) {
  showForm(true);
  $('#model-id').value = m.id;
  $('#model-context').value = m.known ? String(m.contextWindow) : '';
  $('#model-output').value = m.known ? String(m.maxOutput) : '';
  $('#model-tools').checked = m.tools;
  $('#model-images').checked = m.images;
  $('#model-constrained').checked = Boolean(m.sampling?.constrained);
  $('#model-price-in').value = String(m.pricing.input);
  $('#model-price-out').value = String(m.pricing.output);
  $('#model-temperature').value = m.sampling?.temperature ?? '';
  $('#model-top-p').value = m.sampling?.topP ?? '';
  $('#model-seed').value = m.sampling?.seed ?? '';
  $('#model-context').focus();
}

function showForm(open) {
  $('#model-add-form').hidden = !open;
  $('#model-add').setAttribute('aria-expanded', String(open));
  clearErrors();
  if (open) $('#model-id').focus();
}

function clearErrors() {
  for (const el of document.querySelectorAll('#model-add-form [data-error-in]')) el.hidden = true;
  for (const el of document.querySelectorAll('#model-add-form [aria-invalid]')) el.removeAttribute('aria-invalid');
}

async function remove(id) {
  try {
    await call('remove_model', { id });
  } catch (e) {
    toast(messageOf(e), { error: true });
  }
  await refreshModels();
  page.onChange();
}

async function save(event) {
  event.preventDefault();
  const button = $('#model-save');
  if (button.disabled) return;
  clearErrors();
  const number = (id) => ($(id).value.trim() === '' ? null : Number($(id).value));
  button.disabled = true;
  try {
    const id = await call('save_model', {
      form: {
        id: $('#model-id').value,
        contextWindow: number('#model-context'),
        maxOutput: number('#model-output'),
        tools: $('#model-tools').checked,
        images: $('#model-images').checked,
        inputPrice: number('#model-price-in'),
        outputPrice: number('#model-price-out'),
        temperature: number('#model-temperature'),
        topP: number('#model-top-p'),
        seed: number('#model-seed'),
        constrained: $('#model-constrained').checked,
      },
    });
    $('#model-add-form').reset();
    showForm(false);
    toast(`Saved ${id}.`);
    await refreshModels();
    page.onChange();
  } catch (e) {
    const error = $(`#model-add-form [data-error-in="${e?.field}"]`);
    if (!error) return toast(messageOf(e), { error: true });
    error.textContent = messageOf(e);
    error.hidden = false;
    const input = $(`#model-add-form [name="${e.field}"]`);
    input?.setAttribute('aria-invalid', 'true');
    input?.focus();
  } finally {
    button.disabled = false;
  }
}

/** Wires the section's controls, once. */
export function initModels() {
  $('#models-filter').addEventListener('input', render);
  $('#model-add').addEventListener('click', () => showForm($('#model-add-form').hidden));
  $('#model-cancel').addEventListener('click', () => showForm(false));
  $('#model-add-form').addEventListener('submit', save);
}
