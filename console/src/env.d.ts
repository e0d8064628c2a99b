// Stylesheets are imported for their effect: Vite bundles them into the console's CSS file.
declare module '*.css';

/** Standalone validators of the workflow definition, compiled by console/vite.config.ts. */
declare module 'virtual:workflow-definition-validator' {
  interface ValidatorError {
    instancePath: string;
    keyword: string;
    message?: string;
    params: Record<string, unknown>;
  }
  interface Validator {
    (data: unknown): boolean;
    errors?: ValidatorError[] | null;
  }
  export const whole: Validator;
  export const code: Validator;
  export const http: Validator;
  export const tool: Validator;
  export const agent: Validator;
}
