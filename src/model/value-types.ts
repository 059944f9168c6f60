/** The two types of value: secrets are sealed at rest, config values stored readable and authenticated. */
export const VALUE_TYPES = ['config', 'secret'] as const;
export type ValueType = (typeof VALUE_TYPES)[number];
