// Stylesheets imported for esbuild to bundle beside the script.
declare module "*.css"
