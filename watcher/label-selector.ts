/**
 * Kubernetes label selectors in their string form (`a=b,c!=d,e in (f,g),!h`), parsed and matched the
 * way the API server does (apimachinery's labels.Parse): so a lookup in a store that holds more than a
 * selector chose can be narrowed to exactly what a watch with that selector would have held.
 */
export interface Requirement {
  key: string;
  op: 'in' | 'notin' | 'exists' | 'doesnotexist';
  values: string[];
}

const KEY = String.raw`[A-Za-z0-9][-A-Za-z0-9_./]*`;
const VALUE = String.raw`[-A-Za-z0-9_.]*`;
const NOT_EXISTS = new RegExp(`^!\\s*(${KEY})$`);
const EXISTS = new RegExp(`^(${KEY})$`);
const EQUALITY = new RegExp(`^(${KEY})\\s*(==|=|!=)\\s*(${VALUE})$`);
const SET = new RegExp(`^(${KEY})\\s+(in|notin)\\s*\\(([^()]*)\\)$`);

export function parseLabelSelector(selector: string): Requirement[] {
  const out: Requirement[] = [];
  for (const part of splitTopLevel(selector)) {
    const text = part.trim();
    if (text === '') {
      if (selector.trim() === '') continue;
      throw new Error(`label selector ${JSON.stringify(selector)}: empty requirement`);
    }
    let m: RegExpExecArray | null;
    if ((m = NOT_EXISTS.exec(text))) out.push({ key: m[1]!, op: 'doesnotexist', values: [] });
    else if ((m = EXISTS.exec(text))) out.push({ key: m[1]!, op: 'exists', values: [] });
    else if ((m = EQUALITY.exec(text))) out.push({ key: m[1]!, op: m[2] === '!=' ? 'notin' : 'in', values: [m[3]!] });
    else if ((m = SET.exec(text))) {
      const values = m[3]!.split(',').map((v) => v.trim());
      if (values.some((v) => !new RegExp(`^${VALUE}$`).test(v))) throw new Error(`label selector ${JSON.stringify(selector)}: bad value in ${JSON.stringify(text)}`);
      out.push({ key: m[1]!, op: m[2] as 'in' | 'notin', values });
    } else throw new Error(`label selector ${JSON.stringify(selector)}: cannot parse ${JSON.stringify(text)}`);
  }
  return out;
}

/** `notin` and `!=` match an object without the label, as on the API server. */
export function matchesLabels(requirements: Requirement[], labels: Readonly<Record<string, string>> = {}): boolean {
  return requirements.every((r) => {
    const has = Object.prototype.hasOwnProperty.call(labels, r.key);
    switch (r.op) {
      case 'exists':
        return has;
      case 'doesnotexist':
        return !has;
      case 'in':
        return has && r.values.includes(labels[r.key]!);
      case 'notin':
        return !has || !r.values.includes(labels[r.key]!);
    }
  });
}

// Commas separate requirements, except inside the parentheses of a set (`in (a,b)`).
function splitTopLevel(s: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '(') depth++;
    else if (s[i] === ')') depth--;
    else if (s[i] === ',' && depth === 0) {
      parts.push(s.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(s.slice(start));
  return parts;
}
