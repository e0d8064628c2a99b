/**
 * A form made from a workflow's input schema (JSON Schema, `type: object`): one field per
 * property (a select for an enum, a checkbox for a boolean, a number input for numbers, a text
 * input for strings, JSON text for anything else), read back into the run inputs.
 */
export interface PropertySchema {
  type?: string | string[];
  enum?: unknown[];
  description?: string;
  title?: string;
  default?: unknown;
}

export interface ObjectSchema {
  properties?: Record<string, PropertySchema>;
  required?: string[];
}

function kind(p: PropertySchema): 'enum' | 'boolean' | 'number' | 'string' | 'json' {
  if (Array.isArray(p.enum) && p.enum.every((v) => typeof v === 'string')) return 'enum';
  const t = Array.isArray(p.type) ? p.type.find((x) => x !== 'null') : p.type;
  if (t === 'boolean') return 'boolean';
  if (t === 'number' || t === 'integer') return 'number';
  if (t === 'string') return 'string';
  return 'json';
}

export function schemaFields(schema: unknown): [string, PropertySchema][] {
  const s = schema as ObjectSchema | undefined;
  return s && typeof s === 'object' && s.properties ? Object.entries(s.properties) : [];
}

export function SchemaFields({ schema, idPrefix }: { schema: unknown; idPrefix: string }) {
  const required = new Set((schema as ObjectSchema | undefined)?.required ?? []);
  const fields = schemaFields(schema);
  if (fields.length === 0) {
    return (
      <div class="field">
        <label for={`${idPrefix}-json`}>Inputs (JSON object)</label>
        <textarea id={`${idPrefix}-json`} name="__json" rows={5} class="mono" defaultValue="{}" />
      </div>
    );
  }
  return (
    <>
      {fields.map(([name, p]) => {
        const id = `${idPrefix}-${name}`;
        const help = p.description ? `${id}-help` : undefined;
        const label = `${p.title ?? name}${required.has(name) ? ' (required)' : ''}`;
        const k = kind(p);
        const def = p.default;
        return (
          <div class={k === 'boolean' ? 'field check' : 'field'} key={name}>
            {k === 'boolean' ? (
              <>
                <input id={id} name={name} type="checkbox" defaultChecked={def === true} aria-describedby={help} />
                <label for={id}>{label}</label>
              </>
            ) : (
              <>
                <label for={id}>{label}</label>
                {k === 'enum' ? (
                  <select id={id} name={name} required={required.has(name)} aria-describedby={help}>
                    {!required.has(name) && <option value="">(none)</option>}
                    {(p.enum as string[]).map((v) => (
                      <option key={v} value={v} selected={def === v}>
                        {v}
                      </option>
                    ))}
                  </select>
                ) : k === 'json' ? (
                  <textarea
                    id={id}
                    name={name}
                    rows={3}
                    class="mono"
                    required={required.has(name)}
                    aria-describedby={help}
                    placeholder="JSON value"
                    defaultValue={def === undefined ? '' : JSON.stringify(def)}
                  />
                ) : k === 'number' ? (
                  <input
                    id={id}
                    name={name}
                    type="number"
                    step="any"
                    required={required.has(name)}
                    defaultValue={def === undefined ? '' : String(def)}
                    aria-describedby={help}
                  />
                ) : (
                  <input
                    id={id}
                    name={name}
                    type="text"
                    required={required.has(name)}
                    defaultValue={def === undefined ? '' : String(def)}
                    aria-describedby={help}
                  />
                )}
              </>
            )}
            {help && (
              <p class="help" id={help}>
                {p.description}
              </p>
            )}
          </div>
        );
      })}
    </>
  );
}

/** The run inputs the form holds; throws with the field's name when a JSON field does not parse. */
export function readInputs(schema: unknown, form: HTMLFormElement): Record<string, unknown> {
  const data = new FormData(form);
  const fields = schemaFields(schema);
  if (fields.length === 0) {
    const text = String(data.get('__json') ?? '{}').trim() || '{}';
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new Error('Inputs: not valid JSON');
    }
    if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error('Inputs: a JSON object is needed');
    return value as Record<string, unknown>;
  }
  const out: Record<string, unknown> = {};
  for (const [name, p] of fields) {
    const k = kind(p);
    if (k === 'boolean') {
      out[name] = data.get(name) === 'on';
      continue;
    }
    const raw = String(data.get(name) ?? '');
    if (raw === '') continue;
    if (k === 'number') out[name] = Number(raw);
    else if (k === 'json') {
      try {
        out[name] = JSON.parse(raw);
      } catch {
        throw new Error(`${name}: not valid JSON`);
      }
    } else out[name] = raw;
  }
  return out;
}
