// Stylesheets imported by the console's entry point are bundled by esbuild into the page's CSS file.
declare module "*.css" {}
