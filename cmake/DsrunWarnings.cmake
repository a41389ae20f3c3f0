# dsrun_warnings(target): our own targets build with -Wall -Wextra (and -Werror unless DSRUN_WERROR=OFF).
function(dsrun_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(DSRUN_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
